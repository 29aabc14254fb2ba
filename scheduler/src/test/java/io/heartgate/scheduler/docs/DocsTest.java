package io.heartgate.scheduler.docs;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.heartgate.agent.AgentMain;
import io.heartgate.loadgen.LoadGenMain;
import io.heartgate.scheduler.SchedulerMain;
import io.heartgate.sim.SimMain;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Holds the docs to what the code declares: the flag tables of {@code docs/REFERENCE.md} are the
 * ones the picocli specs render, every relative link in every Markdown file resolves (file and
 * heading), every alert rule names documented metrics and a runbook section, and the README and
 * the benchmark results stay within their line limits. After
 * changing an option, regenerate the tables with
 * {@code mvn -pl scheduler test -Dtest=DocsTest -Dheartgate.docs.write=true}.
 */
class DocsTest {

    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Path REFERENCE = ROOT.resolve("docs/REFERENCE.md");
    private static final Pattern BLOCK = Pattern.compile(
            "(<!-- generated: flags of ([a-z-]+)[^>]*-->\n)(.*?)(<!-- end of generated flags -->)", Pattern.DOTALL);
    private static final Map<String, Class<?>> COMMANDS = Map.of(
            "scheduler", SchedulerMain.class, "heartbeat-agent", AgentMain.class,
            "inference-sim", SimMain.class, "loadgen", LoadGenMain.class);
    private static final Set<String> WITHOUT_ENV = Set.of("inference-sim", "loadgen");
    private static final Pattern LINK = Pattern.compile("\\[[^\\]]*]\\(([^)\\s]+)\\)");

    @Test
    void flagTablesAreTheOnesTheCodeDeclares() throws IOException {
        String doc = Files.readString(REFERENCE);
        Matcher m = BLOCK.matcher(doc);
        StringBuilder regenerated = new StringBuilder();
        Set<String> seen = new HashSet<>();
        List<String> stale = new ArrayList<>();
        while (m.find()) {
            String command = m.group(2);
            assertThat(COMMANDS).as("a command named in REFERENCE.md").containsKey(command);
            String table = FlagTable.render(COMMANDS.get(command), !WITHOUT_ENV.contains(command));
            if (!table.equals(m.group(3))) {
                stale.add(command);
            }
            seen.add(command);
            m.appendReplacement(regenerated, Matcher.quoteReplacement(m.group(1) + table + m.group(4)));
        }
        m.appendTail(regenerated);
        assertThat(seen).as("every command has its generated table").containsExactlyInAnyOrderElementsOf(
                COMMANDS.keySet());
        if (Boolean.getBoolean("heartgate.docs.write")) {
            Files.writeString(REFERENCE, regenerated.toString());
            return;
        }
        assertThat(stale).as("flag tables that differ from the code; regenerate them with "
                + "mvn -pl scheduler test -Dtest=DocsTest -Dheartgate.docs.write=true").isEmpty();
    }

    @Test
    void everyRelativeLinkResolves() throws IOException {
        List<Path> docs;
        try (Stream<Path> walk = Files.walk(ROOT)) {
            docs = walk.filter(p -> p.toString().endsWith(".md"))
                    .filter(p -> !ROOT.relativize(p).toString().matches(
                            "(?:.*/)?(?:target|node_modules|\\.git|\\.mirror)/.*"))
                    .toList();
        }
        assertThat(docs).isNotEmpty();
        Map<Path, Set<String>> anchors = new HashMap<>();
        List<String> broken = new ArrayList<>();
        for (Path doc : docs) {
            String text = withoutCodeBlocks(Files.readString(doc, StandardCharsets.UTF_8));
            Matcher m = LINK.matcher(text);
            while (m.find()) {
                String target = m.group(1);
                if (target.matches("^[a-zA-Z][a-zA-Z0-9+.-]*:.*")) {
                    continue; // http:, https:, mailto:
                }
                int hash = target.indexOf('#');
                String file = hash < 0 ? target : target.substring(0, hash);
                String anchor = hash < 0 ? null : target.substring(hash + 1);
                Path resolved = file.isEmpty() ? doc : doc.getParent().resolve(file).normalize();
                if (!Files.exists(resolved)) {
                    broken.add(ROOT.relativize(doc) + ": " + target + " (no such file)");
                } else if (anchor != null && resolved.toString().endsWith(".md")
                        && !anchors.computeIfAbsent(resolved, DocsTest::headings).contains(anchor)) {
                    broken.add(ROOT.relativize(doc) + ": " + target + " (no such heading)");
                }
            }
        }
        assertThat(broken).as("links that lead nowhere").isEmpty();
    }

    @Test
    void readmeAndBenchmarksKeepTheirLength() throws IOException {
        assertThat(Files.readAllLines(ROOT.resolve("README.md")).size()).as("README.md lines").isLessThanOrEqualTo(300);
        assertThat(Files.readAllLines(ROOT.resolve("docs/BENCHMARKS.md")).size()).as("docs/BENCHMARKS.md lines")
                .isLessThanOrEqualTo(600);
    }

    @Test
    void everyAlertHasItsMetricsAndItsRunbook() throws IOException {
        JsonNode rules = new ObjectMapper(new YAMLFactory())
                .readTree(ROOT.resolve("deploy/prometheus/heartgate-alerts.yml").toFile());
        String reference = Files.readString(REFERENCE);
        Set<String> runbook = headings(ROOT.resolve("docs/OPERATIONS.md"));
        List<String> wrong = new ArrayList<>();
        int alerts = 0;
        for (JsonNode group : rules.path("groups")) {
            for (JsonNode rule : group.path("rules")) {
                alerts++;
                String name = rule.path("alert").asText();
                Matcher metric = Pattern.compile("heartgate_\\w+").matcher(rule.path("expr").asText());
                while (metric.find()) {
                    if (!reference.contains("`" + metric.group() + "`")) {
                        wrong.add(name + ": " + metric.group() + " is not in REFERENCE.md");
                    }
                }
                String link = rule.path("annotations").path("runbook").asText();
                if (!link.equals("docs/OPERATIONS.md#" + name.toLowerCase(Locale.ROOT))
                        || !runbook.contains(name.toLowerCase(Locale.ROOT))) {
                    wrong.add(name + ": no runbook section in OPERATIONS.md (" + link + ")");
                }
            }
        }
        assertThat(alerts).isPositive();
        assertThat(wrong).isEmpty();
    }

    /** The anchors GitHub gives a document's headings. */
    private static Set<String> headings(Path doc) {
        Set<String> out = new HashSet<>();
        Map<String, Integer> counts = new HashMap<>();
        try {
            for (String line : withoutCodeBlocks(Files.readString(doc)).split("\n")) {
                Matcher h = Pattern.compile("^#{1,6} (.*)$").matcher(line);
                if (!h.matches()) {
                    continue;
                }
                String slug = slug(h.group(1));
                int n = counts.merge(slug, 1, Integer::sum) - 1;
                out.add(n == 0 ? slug : slug + "-" + n);
            }
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        return out;
    }

    /** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
    static String slug(String heading) {
        String plain = heading.replaceAll("\\[([^\\]]*)]\\([^)]*\\)", "$1").trim().toLowerCase(Locale.ROOT);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < plain.length(); i++) {
            char c = plain.charAt(i);
            if (Character.isLetterOrDigit(c) || c == '-' || c == '_') {
                sb.append(c);
            } else if (c == ' ') {
                sb.append('-');
            }
        }
        return sb.toString();
    }

    private static String withoutCodeBlocks(String text) {
        return text.replaceAll("(?s)\n```.*?\n```", "\n");
    }
}

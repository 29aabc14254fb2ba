package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The scheduler's rooms depend on each other one way (docs/ARCHITECTURE.md): read from the sources,
 * every reference to another scheduler package (an import or a qualified name) is an edge, and the
 * graph has no cycle; the rooms of the request path import only what their job needs. Both the
 * scheduler's sources and its core module's are read: the core module's pom keeps Netty, Vert.x and
 * Kafka out of it, this test keeps its rooms in order.
 */
class PackageDependenciesTest {

    private static final String BASE = "io.heartgate.scheduler";
    private static final Pattern PACKAGE = Pattern.compile("^package ([\\w.]+);", Pattern.MULTILINE);
    private static final Pattern REFERENCE = Pattern.compile("io\\.heartgate\\.scheduler((?:\\.[a-z]\\w*)*)\\.[A-Z]");
    private static final Map<String, Set<String>> DEPENDENCIES = new TreeMap<>();

    @BeforeAll
    static void read() throws IOException {
        for (Path root : List.of(Path.of("src/main/java"), Path.of("../scheduler-core/src/main/java"))) {
            try (Stream<Path> files = Files.walk(root)) {
                files.filter(p -> p.toString().endsWith(".java")).forEach(PackageDependenciesTest::readFile);
            }
        }
    }

    private static void readFile(Path file) {
        String source;
        try {
            source = Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Matcher p = PACKAGE.matcher(source);
        if (!p.find()) {
            return;
        }
        String own = room(p.group(1));
        Set<String> used = DEPENDENCIES.computeIfAbsent(own, k -> new TreeSet<>());
        Matcher r = REFERENCE.matcher(source);
        while (r.find()) {
            String other = room(BASE + r.group(1));
            if (!other.equals(own)) {
                used.add(other);
            }
        }
    }

    /** A package's name under the base: {@code proxy.stage}, or {@code (root)}. */
    private static String room(String pkg) {
        return pkg.equals(BASE) ? "(root)" : pkg.substring(BASE.length() + 1);
    }

    @Test
    void noPackageCycle() {
        List<List<String>> cycles = new ArrayList<>();
        Set<String> done = new HashSet<>();
        for (String start : DEPENDENCIES.keySet()) {
            findCycle(start, new ArrayDeque<>(), new HashSet<>(), done, cycles);
        }
        assertThat(cycles).as("package cycles").isEmpty();
    }

    private static void findCycle(String at, Deque<String> path, Set<String> onPath, Set<String> done,
                                  List<List<String>> cycles) {
        if (onPath.contains(at)) {
            List<String> cycle = new ArrayList<>(path);
            cycles.add(cycle.subList(cycle.indexOf(at), cycle.size()));
            return;
        }
        if (!done.add(at)) {
            return;
        }
        path.addLast(at);
        onPath.add(at);
        for (String next : DEPENDENCIES.getOrDefault(at, Set.of())) {
            findCycle(next, path, onPath, done, cycles);
        }
        onPath.remove(at);
        path.removeLast();
    }

    @Test
    void theRoomsOfTheRequestPathImportOnlyWhatTheirJobNeeds() {
        Map<String, Set<String>> allowed = new HashMap<>();
        allowed.put("request", Set.of());
        allowed.put("routing", Set.of("affinity", "balancer", "request", "status", "table", "time"));
        allowed.put("admission", Set.of("request", "routing", "status", "table", "time"));
        allowed.put("balancer", Set.of("affinity", "table", "time"));
        allowed.put("table", Set.of());
        allowed.put("time", Set.of());
        allowed.put("tracing", Set.of("config", "request", "table", "time"));
        allowed.forEach((room, may) -> assertThat(DEPENDENCIES.getOrDefault(room, Set.of()))
                .as("what %s imports", room).isSubsetOf(may));
    }
}

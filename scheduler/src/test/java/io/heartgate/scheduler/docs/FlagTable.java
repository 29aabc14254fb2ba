package io.heartgate.scheduler.docs;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * A command's flag table for {@code docs/REFERENCE.md}, rendered from its picocli spec: the flag
 * and its parameter label, the environment variable and the default (both from the option's
 * {@code defaultValue}, or the description's {@code (default: ...)} where words say it better),
 * the values accepted (the description's {@code Accepted:} line) and the meaning (the rest).
 */
final class FlagTable {

    private static final Pattern ENV = Pattern.compile("^\\$\\{env:([A-Za-z0-9_]+)(?::-(.*))?}$");
    private static final Pattern SUFFIX = Pattern.compile("\\s*(?:\\[env [A-Za-z0-9_]+])?\\s*\\(default: (.*)\\)$");
    private static final String ACCEPTED = "Accepted: ";

    private FlagTable() {
    }

    /** Returns the Markdown table of {@code command}'s options; {@code withEnv} adds the env column. */
    static String render(Class<?> command, boolean withEnv) {
        CommandLine cl = new CommandLine(command);
        cl.setInterpolateVariables(false);
        StringBuilder sb = new StringBuilder(withEnv
                ? "| flag | env | default | accepted | meaning |\n| --- | --- | --- | --- | --- |\n"
                : "| flag | default | accepted | meaning |\n| --- | --- | --- | --- |\n");
        for (OptionSpec o : cl.getCommandSpec().options()) {
            if (o.usageHelp() || o.versionHelp() || o.hidden()) {
                continue;
            }
            Row r = row(o);
            sb.append("| ").append(cell(r.flag())).append(" | ");
            if (withEnv) {
                sb.append(cell(r.env())).append(" | ");
            }
            sb.append(cell(r.defaultText())).append(" | ").append(cell(r.accepted())).append(" | ")
                    .append(cell(r.meaning())).append(" |\n");
        }
        return sb.toString();
    }

    private record Row(String flag, String env, String defaultText, String accepted, String meaning) {
    }

    private static Row row(OptionSpec o) {
        String raw = o.defaultValue();
        String env = null;
        String envDefault = raw;
        if (raw != null) {
            Matcher m = ENV.matcher(raw);
            if (m.matches()) {
                env = m.group(1);
                envDefault = m.group(2);
            }
        }
        List<String> meaning = new ArrayList<>();
        String accepted = "";
        String stated = null;
        for (String line : o.description()) {
            if (line.startsWith(ACCEPTED)) {
                accepted = line.substring(ACCEPTED.length());
                continue;
            }
            Matcher m = SUFFIX.matcher(line);
            if (stated == null && m.find()) {
                stated = m.group(1);
                line = line.substring(0, m.start());
            }
            meaning.add(line.replace("%%", "%"));
        }
        String defaultText;
        if (stated != null) {
            defaultText = stated.equals(envDefault) ? code(stated) : stated;
        } else if (o.required()) {
            defaultText = "required";
        } else if (envDefault != null) {
            defaultText = code(envDefault);
        } else {
            defaultText = o.arity().max() == 0 ? "off" : "none";
        }
        boolean bool = o.type() == boolean.class || o.type() == Boolean.class;
        String envText = env == null ? "none" : bool ? code(env) + " (`true`/`false`)" : code(env);
        return new Row(code(flag(o)), envText, defaultText, accepted.replace("%%", "%"),
                String.join(" ", meaning));
    }

    private static String flag(OptionSpec o) {
        String names = String.join("`, `", o.names());
        if (o.arity().max() == 0) {
            return names;
        }
        String label = o.paramLabel();
        return o.arity().min() == 0 ? names + "[=" + label + "]" : names + " " + label;
    }

    private static String code(String s) {
        return "`" + s + "`";
    }

    /** A table cell: a pipe would end it, even inside a code span. */
    private static String cell(String s) {
        return s.replace("\\|", "|").replace("|", "\\|");
    }
}

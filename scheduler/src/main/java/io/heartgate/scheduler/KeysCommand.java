package io.heartgate.scheduler;

import io.heartgate.scheduler.trust.ApiKeys;
import java.io.PrintWriter;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code scheduler keys add NAME}: makes a new random API key and prints it on the first line and the
 * line for the keys file on the second, so that the key itself is shown once and stored nowhere.
 */
@Command(name = "keys", mixinStandardHelpOptions = true, description = "Manage the proxy's API keys (--api-keys).",
        subcommands = KeysCommand.Add.class)
final class KeysCommand {

    /** A key is this prefix and 32 random bytes in URL-safe Base64: 256 bits, no characters to escape. */
    static final String PREFIX = "hg-";

    @Command(name = "add", mixinStandardHelpOptions = true,
            description = {"Prints a new random API key (line 1) and the line to add to the keys file (line 2).",
                "The key is shown only here: the file holds its SHA-256."})
    static final class Add implements Callable<Integer> {

        @Spec
        CommandSpec spec;

        @Parameters(paramLabel = "NAME", description = "the caller's name, as logs and metrics show it: 1 to 64 of A-Za-z0-9._-")
        String name;

        @Option(names = "--models", paramLabel = "MODEL[,MODEL...]",
                description = "the only models the key may use (default: any)")
        String models;

        @Override
        public Integer call() {
            byte[] random = new byte[32];
            new SecureRandom().nextBytes(random);
            String key = PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(random);
            String line = name + " " + ApiKeys.hash(key) + (models == null ? "" : " models=" + models);
            ApiKeys.parse(line); // the same checks as the file gets; a bad name or model list ends here
            PrintWriter out = spec.commandLine().getOut();
            out.println(key);
            out.println(line);
            out.flush();
            return 0;
        }
    }
}

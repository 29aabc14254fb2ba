package io.heartgate.embedded;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * Runs inside the broker's child JVM: formats the storage on first use, then runs Kafka.
 *
 * <p>Kafka's fatal-fault handler halts its JVM, so the broker lives in a JVM of its own and a broker
 * fault can never take the scheduler down. To make sure the child never outlives its parent, even a
 * SIGKILLed one, it watches its stdin: the parent holds the other end of that pipe, and the kernel
 * closes it when the parent dies, however it dies.
 */
public final class EmbeddedBrokerMain {

    /** Exit status when the parent went away. */
    static final int PARENT_GONE = 3;

    private EmbeddedBrokerMain() {
    }

    /**
     * Starts the broker.
     *
     * @param args the server properties file, the cluster id to format with, and for a secured broker
     *     the file holding its own SCRAM user's password, created when the storage is formatted
     */
    public static void main(String[] args) throws Exception {
        if (args.length != 2 && args.length != 3) {
            System.err.println("usage: EmbeddedBrokerMain <server.properties> <cluster-id> [broker-user-secret]");
            System.exit(2);
        }
        watchParent(System.in);
        Path properties = Path.of(args[0]);
        String logDir = logDir(properties);
        if (!Files.exists(Path.of(logDir, "meta.properties"))) {
            List<String> format = new ArrayList<>(List.of("format", "--cluster-id", args[1],
                    "--config", properties.toString(), "--ignore-formatted"));
            if (args.length == 3) {
                // Read here rather than passed as an argument, which anyone could list with ps.
                String password = Files.readString(Path.of(args[2]), StandardCharsets.UTF_8).trim();
                format.add("--add-scram");
                format.add(BrokerSecurity.formatScramArgument(password));
            }
            int rc = kafka.tools.StorageTool.execute(format.toArray(String[]::new), System.out);
            if (rc != 0) {
                System.err.println("ERROR formatting Kafka storage in " + logDir + " failed with status " + rc);
                System.exit(1);
            }
        }
        kafka.Kafka.main(new String[] {properties.toString()});
    }

    private static String logDir(Path properties) throws IOException {
        Properties p = new Properties();
        try (InputStream in = Files.newInputStream(properties)) {
            p.load(in);
        }
        return p.getProperty("log.dirs");
    }

    private static void watchParent(InputStream stdin) {
        Thread watcher = new Thread(() -> {
            try {
                while (stdin.read() >= 0) {
                    // The parent never writes; any byte is ignored.
                }
            } catch (IOException e) {
                // A broken pipe means the same as end of stream: the parent is gone.
            }
            System.err.println("WARN parent process gone; stopping the embedded broker");
            Thread killer = new Thread(() -> {
                try {
                    Thread.sleep(5_000);
                } catch (InterruptedException ignored) {
                    Thread.currentThread().interrupt();
                }
                Runtime.getRuntime().halt(PARENT_GONE);
            }, "embedded-kafka-halt");
            killer.setDaemon(true);
            killer.start();
            System.exit(PARENT_GONE);
        }, "embedded-kafka-parent-watch");
        watcher.setDaemon(true);
        watcher.start();
    }
}

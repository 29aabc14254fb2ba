package io.heartgate.embedded;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;

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
     * @param args the server properties file, then the cluster id to format with
     */
    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: EmbeddedBrokerMain <server.properties> <cluster-id>");
            System.exit(2);
        }
        watchParent(System.in);
        Path properties = Path.of(args[0]);
        String logDir = logDir(properties);
        if (!Files.exists(Path.of(logDir, "meta.properties"))) {
            int rc = kafka.tools.StorageTool.execute(
                    new String[] {"format", "--cluster-id", args[1], "--config", properties.toString(),
                        "--ignore-formatted"},
                    System.out);
            if (rc != 0) {
                System.err.println("ERROR formatting Kafka storage in " + logDir + " failed with status " + rc);
                System.exit(1);
            }
        }
        kafka.Kafka.main(new String[] {properties.toString()});
    }

    private static String logDir(Path properties) throws IOException {
        java.util.Properties p = new java.util.Properties();
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

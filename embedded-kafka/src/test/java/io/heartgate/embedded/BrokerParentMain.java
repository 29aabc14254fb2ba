package io.heartgate.embedded;

/**
 * Stands in for a scheduler in {@link EmbeddedKafkaBrokerIT}: starts a broker, prints its pid and
 * port, then waits to be killed.
 */
public final class BrokerParentMain {

    private BrokerParentMain() {
    }

    public static void main(String[] args) throws Exception {
        EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.start(EmbeddedKafkaConfig.forTests());
        System.out.println("BROKER " + broker.pid() + " " + broker.port() + " " + broker.dataDir());
        System.out.flush();
        // Block until stdin closes; the test kills this JVM with SIGKILL long before.
        while (System.in.read() >= 0) {
            // ignore input
        }
        broker.close();
    }
}

package io.heartgate.testkit;

import io.heartgate.embedded.EmbeddedKafkaBroker;
import io.heartgate.embedded.EmbeddedKafkaConfig;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.kafka.KafkaContainer;

/**
 * Gives tests one real Kafka broker per test JVM: a Testcontainers {@link KafkaContainer} where a
 * Docker engine answers, the {@link EmbeddedKafkaBroker} otherwise, so the same tests run in both
 * places. Use with {@code @ExtendWith(KafkaExtension.class)} and a {@link TestKafka} parameter.
 *
 * <p>The environment variable {@code HEARTGATE_TEST_KAFKA} overrides the choice: {@code embedded},
 * {@code docker}, or a {@code HOST:PORT} of a broker someone else runs. The broker is started on
 * first use and closed when the test JVM's root context closes; the log says which kind was used.
 *
 * <p>A {@link SecuredTestKafka} parameter gets a second, SASL_SSL broker, always embedded, started on
 * the first test that asks for one and closed the same way; tests that ask only for {@link TestKafka}
 * never start it.
 */
public final class KafkaExtension implements ParameterResolver {

    private static final Logger log = LoggerFactory.getLogger(KafkaExtension.class);
    private static final ExtensionContext.Namespace NAMESPACE = ExtensionContext.Namespace.create(KafkaExtension.class);
    private static final String KAFKA_IMAGE = "apache/kafka:4.1.1";

    @Override
    public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        Class<?> type = parameterContext.getParameter().getType();
        return type == TestKafka.class || type == SecuredTestKafka.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
        ExtensionContext.Store store = extensionContext.getRoot().getStore(NAMESPACE);
        if (parameterContext.getParameter().getType() == SecuredTestKafka.class) {
            return store.getOrComputeIfAbsent("secured-kafka", key -> startSecured(), SecuredKafka.class);
        }
        return store.getOrComputeIfAbsent("kafka", key -> start(), Running.class);
    }

    private static SecuredKafka startSecured() {
        long started = System.nanoTime();
        SecuredKafka kafka = SecuredKafka.start();
        String line = String.format("Secured Kafka for tests: embedded SASL_SSL broker at %s (ready in %d ms)",
                kafka.bootstrapServers(), (System.nanoTime() - started) / 1_000_000);
        log.info(line);
        System.out.println("[heartgate-test] " + line);
        return kafka;
    }

    private static Running start() {
        String choice = System.getenv().getOrDefault("HEARTGATE_TEST_KAFKA", "auto").trim();
        long started = System.nanoTime();
        Running running;
        if (choice.contains(":")) {
            running = new Running(choice, "external", null, null);
        } else if (choice.equals("docker") || (choice.equals("auto") && dockerAvailable())) {
            KafkaContainer container = new KafkaContainer(KAFKA_IMAGE);
            container.start();
            running = new Running(container.getBootstrapServers(), "testcontainers", null, container);
        } else {
            EmbeddedKafkaBroker broker = EmbeddedKafkaBroker.start(EmbeddedKafkaConfig.forTests());
            running = new Running(broker.bootstrapServers(), "embedded", broker, null);
        }
        String line = String.format("Kafka for tests: %s broker at %s (ready in %d ms)", running.kind(),
                running.bootstrapServers(), (System.nanoTime() - started) / 1_000_000);
        log.info(line);
        // Also on stdout, so the Maven output says which broker the tests ran against.
        System.out.println("[heartgate-test] " + line);
        return running;
    }

    private static boolean dockerAvailable() {
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException | LinkageError e) {
            log.info("No Docker engine ({}); using the embedded broker", e.toString());
            return false;
        }
    }

    /** Holds the running broker; closed by JUnit when the root context closes. */
    @SuppressWarnings("deprecation") // CloseableResource: still the one interface every JUnit 5.x closes
    static final class Running implements TestKafka, AutoCloseable, ExtensionContext.Store.CloseableResource {
        private final String bootstrapServers;
        private final String kind;
        private final EmbeddedKafkaBroker broker;
        private final KafkaContainer container;

        Running(String bootstrapServers, String kind, EmbeddedKafkaBroker broker, KafkaContainer container) {
            this.bootstrapServers = bootstrapServers;
            this.kind = kind;
            this.broker = broker;
            this.container = container;
        }

        @Override
        public String bootstrapServers() {
            return bootstrapServers;
        }

        @Override
        public String kind() {
            return kind;
        }

        @Override
        public void close() {
            if (broker != null) {
                broker.close();
            }
            if (container != null) {
                container.stop();
            }
        }
    }
}

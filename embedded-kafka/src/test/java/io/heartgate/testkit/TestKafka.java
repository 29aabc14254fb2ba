package io.heartgate.testkit;

/**
 * Gives a test a real Kafka broker to talk to. Injected by {@link KafkaExtension} into test
 * constructors, lifecycle methods and test methods.
 */
public interface TestKafka {

    /** Returns the bootstrap address, {@code HOST:PORT}. */
    String bootstrapServers();

    /** Returns which kind of broker this is, for logs: {@code embedded}, {@code testcontainers} or {@code external}. */
    String kind();
}

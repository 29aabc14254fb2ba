package io.heartgate.scheduler.config;

import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.protocol.cli.KafkaSettings;
import java.nio.file.Path;

/**
 * Says which of the scheduler's trust features are on, by the files that configure them; each is
 * off when its file is {@code null}. The files are read at start (a bad one stops the scheduler,
 * naming its setting) and some again when they change. Immutable.
 *
 * @param apiKeys the proxy's callers ({@code --api-keys}), reloaded on change
 * @param upstreamApiKey the key every node requires ({@code --upstream-api-key})
 * @param adminToken the admin port's bearer token ({@code --admin-token})
 * @param adminTokenAll whether the token guards {@code /healthz}, {@code /readyz} and {@code /metrics} too
 * @param heartbeatKeys the keys heartbeats must be signed with ({@code --heartbeat-keys})
 * @param tlsCert the PEM certificate chain of both HTTP ports ({@code --tls-cert}), reloaded on change
 * @param tlsKey the PEM private key of {@code tlsCert} ({@code --tls-key})
 * @param kafkaClient the operator's Kafka client properties ({@code --kafka-config}, {@code KAFKA_*});
 *     {@code null} is {@link KafkaSettings#NONE}
 * @param embeddedKafkaUsers SCRAM users of the embedded broker, which then speaks SASL_SSL only
 *     ({@code --embedded-kafka-users}); ignored with an external Kafka
 */
public record SecurityConfig(Path apiKeys, Path upstreamApiKey, Path adminToken, boolean adminTokenAll,
                             Path heartbeatKeys, Path tlsCert, Path tlsKey, KafkaSettings kafkaClient,
                             Path embeddedKafkaUsers) {

    /** Every feature off: today's open ports and unsigned heartbeats. */
    public static final SecurityConfig NONE = new SecurityConfig(null, null, null, false, null, null, null, KafkaSettings.NONE, null);

    /** Checks that settings that go together are given together. */
    public SecurityConfig {
        if (kafkaClient == null) {
            kafkaClient = KafkaSettings.NONE;
        }
        if (adminTokenAll && adminToken == null) {
            throw new InvalidSettingException("adminTokenAll", "needs --admin-token");
        }
        if ((tlsCert == null) != (tlsKey == null)) {
            throw new InvalidSettingException(tlsCert == null ? "tlsCert" : "tlsKey",
                    "--tls-cert and --tls-key go together");
        }
    }
}

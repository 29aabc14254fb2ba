package io.heartgate.scheduler.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.InvalidSettingException;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TracingConfigTest {

    @Test
    void offWithoutAnEndpointOnWithTheFlagOrTheStandardVariables() {
        assertThat(new TracingConfig(null, null, Map.of("PATH", "/bin")).on()).isFalse();
        assertThat(new TracingConfig(" ", 0.5, Map.of()).on()).isFalse();
        assertThat(new TracingConfig("http://collector:4318", null, Map.of()).on()).isTrue();
        assertThat(new TracingConfig(null, null, Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")).on()).isTrue();
        assertThat(new TracingConfig(null, null, Map.of("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/v1/traces"))
                .on()).isTrue();
        assertThat(new TracingConfig(null, null, Map.of("OTEL_TRACES_EXPORTER", "otlp")).on()).isTrue();
        assertThat(TracingConfig.OFF.on()).isFalse();
    }

    @Test
    void theSdkSwitchesWinOverAnEndpoint() {
        assertThat(new TracingConfig("http://c:4318", null, Map.of("OTEL_SDK_DISABLED", "true")).on()).isFalse();
        assertThat(new TracingConfig("http://c:4318", null, Map.of("OTEL_TRACES_EXPORTER", "none")).on()).isFalse();
    }

    @Test
    void propertiesAreTheDefaultsThenTheVariablesThenTheFlags() {
        Map<String, String> p = new TracingConfig("http://flag:4318", 0.25, Map.of(
                "OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://env:4318/v1/traces",
                "OTEL_TRACES_SAMPLER", "always_on",
                "OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=a",
                "OTEL_METRICS_EXPORTER", "otlp",
                "HOME", "/root")).properties();
        assertThat(p).containsEntry("otel.exporter.otlp.endpoint", "http://flag:4318")
                .containsEntry("otel.exporter.otlp.traces.endpoint", "http://flag:4318/v1/traces")
                .containsEntry("otel.traces.sampler", "parentbased_traceidratio")
                .containsEntry("otel.traces.sampler.arg", "0.25")
                .containsEntry("otel.exporter.otlp.headers", "x-tenant=a")
                .containsEntry("otel.service.name", "heartgate-scheduler")
                .containsEntry("otel.metrics.exporter", "none") // traces only, whatever the variables say
                .containsEntry("otel.logs.exporter", "none")
                .doesNotContainKey("home");
        Map<String, String> env = new TracingConfig(null, null, Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318",
                "OTEL_SERVICE_NAME", "gw", "OTEL_TRACES_SAMPLER", "traceidratio")).properties();
        assertThat(env).containsEntry("otel.exporter.otlp.endpoint", "http://env:4318")
                .containsEntry("otel.service.name", "gw").containsEntry("otel.traces.sampler", "traceidratio")
                .doesNotContainKey("otel.exporter.otlp.traces.endpoint");
        assertThat(new TracingConfig("http://flag:4318", 0.25, Map.of()).summary())
                .isEqualTo("OTLP/http/protobuf to http://flag:4318/v1/traces, sampler parentbased_traceidratio 0.25, "
                        + "service heartgate-scheduler");
    }

    @Test
    void badSettingsAreRefusedByName() {
        assertThatThrownBy(() -> new TracingConfig("collector:4318", null, Map.of()))
                .isInstanceOf(InvalidSettingException.class).hasMessageContaining("otlpEndpoint");
        assertThatThrownBy(() -> new TracingConfig("ftp://c/", null, Map.of()))
                .isInstanceOf(InvalidSettingException.class).hasMessageContaining("otlpEndpoint");
        assertThatThrownBy(() -> new TracingConfig("http://c:4318", 1.5, Map.of()))
                .isInstanceOf(InvalidSettingException.class).hasMessageContaining("traceSampleRatio");
        assertThatThrownBy(() -> new TracingConfig("http://c:4318", Double.NaN, Map.of()))
                .isInstanceOf(InvalidSettingException.class).hasMessageContaining("traceSampleRatio");
        assertThatThrownBy(() -> new TracingConfig(null, null, Map.of("OTEL_TRACES_EXPORTER", "zipkin")))
                .isInstanceOf(InvalidSettingException.class).hasMessageContaining("OTEL_TRACES_EXPORTER");
        assertThatThrownBy(() -> new TracingConfig("http://c:4318", null, Map.of("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")))
                .isInstanceOf(InvalidSettingException.class).hasMessageContaining("OTEL_EXPORTER_OTLP_PROTOCOL");
        assertThatThrownBy(() -> new TracingConfig("http://c:4318", null, Map.of("OTEL_EXPORTER_OTLP_PROTOCOL",
                "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")))
                .isInstanceOf(InvalidSettingException.class).hasMessageContaining("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL");
    }

    @Test
    void offJudgesNoVariableAndTheTracesProtocolWinsOverTheGeneralOne() {
        assertThat(new TracingConfig(null, null, Map.of("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")).on()).isFalse();
        assertThat(new TracingConfig(null, null, Map.of("OTEL_SDK_DISABLED", "true", "OTEL_TRACES_EXPORTER", "zipkin"))
                .on()).isFalse();
        assertThat(new TracingConfig("http://c:4318", null, Map.of("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc",
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")).on()).isTrue();
        assertThat(new TracingConfig(null, null, Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318",
                "OTEL_TRACES_SAMPLER_ARG", "0.1")).summary()).contains("sampler parentbased_always_on,");
    }
}

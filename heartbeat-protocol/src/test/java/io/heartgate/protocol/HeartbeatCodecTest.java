package io.heartgate.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class HeartbeatCodecTest {

    private final HeartbeatCodec codec = new HeartbeatCodec();

    @Test
    void decodesTheMinimalMessageWithDefaults() {
        Heartbeat hb = beat(codec.decode(Fixtures.read("valid/minimal.json")));

        assertThat(hb.nodeId()).isEqualTo("gpu-a");
        assertThat(hb.url()).isEqualTo("http://10.0.0.5:11434");
        assertThat(hb.state()).isEqualTo(NodeState.UP);
        assertThat(hb.intervalMs()).isEqualTo(1000);
        assertThat(hb.weight()).isEqualTo(1);
        assertThat(hb.instance()).isNull();
        assertThat(hb.seq()).isNull();
        assertThat(hb.sentAt()).isNull();
        assertThat(hb.backend()).isNull();
        assertThat(hb.models()).isEmpty();
        assertThat(hb.load()).isEqualTo(Load.UNKNOWN);
        assertThat(hb.gpus()).isEmpty();
        assertThat(hb.serves("anything:7b")).isTrue();
    }

    @Test
    void decodesEveryFieldOfTheFullMessage() {
        Heartbeat hb = beat(codec.decode(Fixtures.read("valid/full.json")));

        assertThat(hb.instance()).isEqualTo("6f1c0b1e-2a4d-4b8e-9f3a-0c5d7e9a1b2c");
        assertThat(hb.seq()).isEqualTo(42L);
        assertThat(hb.weight()).isEqualTo(5);
        assertThat(hb.sentAt()).isEqualTo(Instant.parse("2026-11-30T16:00:00.123Z"));
        assertThat(hb.backend()).isEqualTo("ollama");
        assertThat(hb.models()).containsExactly("llama3:8b", "qwen2.5:7b");
        assertThat(hb.load()).isEqualTo(new Load(2, 0, 0.31));
        assertThat(hb.gpus()).containsExactly(new Gpu("NVIDIA H100", 0.80, 40000L, 81559L));
        assertThat(hb.serves("llama3:8b")).isTrue();
        assertThat(hb.serves("mistral:7b")).isFalse();
    }

    @Test
    void ignoresUnknownFieldsAtEveryLevel() {
        Heartbeat hb = beat(codec.decode(Fixtures.read("valid/unknown-fields.json")));

        assertThat(hb.nodeId()).isEqualTo("gpu-b.rack2:0");
        assertThat(hb.state()).isEqualTo(NodeState.DRAINING);
        assertThat(hb.load()).isEqualTo(new Load(1, null, null));
        assertThat(hb.gpus()).containsExactly(new Gpu("NVIDIA H200", null, 21619L, 143771L));
    }

    @Test
    void readsAHigherVersionAsVersionOne() {
        Heartbeat hb = beat(codec.decode(Fixtures.read("valid/v2-with-every-v1-field.json")));

        assertThat(hb.nodeId()).isEqualTo("gpu-c");
        assertThat(hb.url()).isEqualTo("http://gpu_c.internal:8000");
        assertThat(hb.state()).isEqualTo(NodeState.DOWN);
        assertThat(hb.weight()).isEqualTo(1000);
        assertThat(hb.intervalMs()).isEqualTo(60000);
        assertThat(hb.seq()).isEqualTo(7L);
        assertThat(hb.load()).isEqualTo(new Load(0, 3, 1.0));
        assertThat(hb.gpus()).containsExactly(new Gpu("NVIDIA H100 80GB HBM3", 0.0, 0L, 81559L));
    }

    @Test
    void treatsJsonNullAsAbsentForOptionalFields() {
        Heartbeat hb = beat(codec.decode(Fixtures.read("valid/null-optionals.json")));

        assertThat(hb.weight()).isEqualTo(1);
        assertThat(hb.models()).isEmpty();
        assertThat(hb.load()).isEqualTo(Load.UNKNOWN);
    }

    @ParameterizedTest(name = "{0} -> {1} at {2}")
    @CsvSource(nullValues = "-", value = {
        "not-json.txt,               MALFORMED_JSON,      -",
        "empty.json,                 MALFORMED_JSON,      -",
        "bad-utf8.bin,               MALFORMED_JSON,      -",
        "duplicate-key.json,         MALFORMED_JSON,      -",
        "deep-nesting.json,          MALFORMED_JSON,      -",
        "json-array.json,            NOT_AN_OBJECT,       -",
        "trailing-text.json,         TRAILING_DATA,       -",
        "two-objects.json,           TRAILING_DATA,       -",
        "ten-mb-string.json.gz,      MESSAGE_TOO_LARGE,   -",
        "missing-version.json,       MISSING_FIELD,       v",
        "version-as-string.json,     WRONG_TYPE,          v",
        "version-0.json,             UNSUPPORTED_VERSION, v",
        "missing-node-id.json,       MISSING_FIELD,       nodeId",
        "node-id-as-number.json,     WRONG_TYPE,          nodeId",
        "bad-id-characters.json,     INVALID_NODE_ID,     nodeId",
        "id-129-chars.json,          INVALID_NODE_ID,     nodeId",
        "relative-url.json,          INVALID_URL,         url",
        "ftp-url.json,               INVALID_URL,         url",
        "url-without-host.json,      INVALID_URL,         url",
        "v2-missing-url.json,        MISSING_FIELD,       url",
        "unknown-state.json,         INVALID_STATE,       state",
        "lowercase-state.json,       INVALID_STATE,       state",
        "missing-interval.json,      MISSING_FIELD,       intervalMs",
        "negative-interval.json,     OUT_OF_RANGE,        intervalMs",
        "ten-minute-interval.json,   OUT_OF_RANGE,        intervalMs",
        "weight-0.json,              OUT_OF_RANGE,        weight",
        "weight-1001.json,           OUT_OF_RANGE,        weight",
        "weight-as-string.json,      WRONG_TYPE,          weight",
        "fractional-weight.json,     WRONG_TYPE,          weight",
        "bad-sent-at.json,           INVALID_VALUE,       sentAt",
        "2000-models.json,           TOO_MANY_ITEMS,      models",
        "models-not-array.json,      WRONG_TYPE,          models",
        "model-not-string.json,      WRONG_TYPE,          models[0]",
        "model-too-long.json,        VALUE_TOO_LONG,      models[1]",
        "negative-in-flight.json,    OUT_OF_RANGE,        load.inFlight",
        "kv-cache-percent.json,      OUT_OF_RANGE,        load.kvCacheUsage",
        "prefix-cache-hit-rate-above-1.json, OUT_OF_RANGE, load.prefixCacheHitRate",
        "prefill-tps-zero.json,      OUT_OF_RANGE,        load.prefillTps",
        "prefill-tps-as-string.json, WRONG_TYPE,          load.prefillTps",
        "gpu-memory-as-string.json,  WRONG_TYPE,          gpus[0].memoryUsedMiB",
    })
    void rejectsInvalidFixtureWithItsReason(String file, Rule rule, String field) {
        Decoded decoded = codec.decode(Fixtures.read("invalid/" + file));

        assertThat(decoded).isInstanceOf(Decoded.Rejected.class);
        Rejection rejection = ((Decoded.Rejected) decoded).rejection();
        assertThat(rejection.rule()).as(rejection.toString()).isEqualTo(rule);
        assertThat(rejection.field()).as(rejection.toString()).isEqualTo(field);
        assertThat(rejection.detail()).isNotBlank().hasSizeLessThan(300);
    }

    @Test
    void everyInvalidFixtureHasAnExpectation() throws IOException, URISyntaxException, NoSuchMethodException {
        Path dir = Path.of(getClass().getResource("/heartbeats/invalid").toURI());
        Set<String> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.map(p -> p.getFileName().toString()).collect(Collectors.toSet());
        }
        CsvSource source = getClass()
                .getDeclaredMethod("rejectsInvalidFixtureWithItsReason", String.class, Rule.class, String.class)
                .getAnnotation(CsvSource.class);
        Set<String> expected = Stream.of(source.value())
                .map(row -> row.substring(0, row.indexOf(',')).trim())
                .collect(Collectors.toSet());

        assertThat(expected).isEqualTo(files);
        assertThat(files).hasSizeGreaterThanOrEqualTo(15);
    }

    @Test
    void roundTripsEveryField() {
        Heartbeat original = Heartbeat.builder("gpu-z", "https://gpu-z.example:8443")
                .instance("i-1")
                .seq(9L)
                .state(NodeState.DRAINING)
                .weight(7)
                .intervalMs(250)
                .sentAt(Instant.parse("2026-11-30T16:00:00.5Z"))
                .backend("vllm")
                .models(List.of("a", "b"))
                .load(new Load(1, 2, 0.5, 0.82, 1850.5))
                .gpus(List.of(new Gpu("NVIDIA H200", 1.0, 21619L, 143771L), new Gpu(null, null, null, null)))
                .build();

        assertThat(beat(codec.decode(codec.encode(original)))).isEqualTo(original);
        assertThat(beat(codec.decode(codec.encodePretty(original).getBytes(StandardCharsets.UTF_8))))
                .isEqualTo(original);
    }

    @Test
    void roundTripsTheCatalogueFields() {
        Heartbeat original = Heartbeat.builder("gpu-y", "http://gpu-y:11434")
                .models(List.of("llama3:8b", "qwen2.5:7b"))
                .modelInfo(List.of(
                        new ModelInfo("llama3:8b", 4_661_224_676L, "365c0bd3c000", "2026-11-01T12:00:00Z",
                                new ModelInfo.Details("", "gguf", "llama", List.of("llama"), "8.0B", "Q4_0")),
                        new ModelInfo("qwen2.5:7b", null, null, null, null)))
                .loaded(List.of(new LoadedModel("llama3:8b", 5_000_000_000L, 4_900_000_000L,
                        "2026-12-01T15:00:00+01:00", 4096)))
                .build();

        assertThat(beat(codec.decode(codec.encode(original)))).isEqualTo(original);
        String json = new String(codec.encode(original), StandardCharsets.UTF_8);
        assertThat(json).contains("\"modelInfo\":[{\"name\":\"llama3:8b\",\"size\":4661224676,")
                .contains("\"details\":{\"parentModel\":\"\",\"format\":\"gguf\"")
                .contains("\"loaded\":[{\"name\":\"llama3:8b\",\"size\":5000000000,\"sizeVram\":4900000000,");
    }

    @Test
    void writesAModelsPrefillOnlyWhenKnownAndReadsItBack() {
        Heartbeat original = Heartbeat.builder("gpu-y", "http://gpu-y:11434")
                .models(List.of("a", "b", "c"))
                .modelInfo(List.of(new ModelInfo("a", null, "d1", null, null, true),
                        new ModelInfo("b", null, "d2", null, null, false),
                        new ModelInfo("c", null, "d3", null, null)))
                .build();

        String json = new String(codec.encode(original), StandardCharsets.UTF_8);

        assertThat(json).contains("{\"name\":\"a\",\"digest\":\"d1\",\"prefill\":true}")
                .contains("{\"name\":\"b\",\"digest\":\"d2\",\"prefill\":false}")
                .contains("{\"name\":\"c\",\"digest\":\"d3\"}");
        assertThat(beat(codec.decode(codec.encode(original)))).isEqualTo(original);
        assertThat(beat(codec.decode(codec.encodePretty(original).getBytes(StandardCharsets.UTF_8))))
                .isEqualTo(original);
    }

    @Test
    void refusesARepeatedFieldAtEveryLevel() {
        String base = "{\"v\":1,\"nodeId\":\"gpu-a\",\"url\":\"http://h:1\",\"state\":\"UP\",\"intervalMs\":1000,";
        for (String rest : List.of("\"state\":\"DOWN\"}", "\"load\":{\"inFlight\":1,\"inFlight\":9}}",
                "\"gpus\":[{\"index\":0,\"name\":\"a\",\"name\":\"b\"}]}",
                "\"unknown\":{\"x\":{\"y\":1,\"y\":2}}}")) {
            Rejection r = rejection(codec.decode(utf8(base + rest)));
            assertThat(r.rule()).as(rest).isEqualTo(Rule.MALFORMED_JSON);
            assertThat(r.detail()).as(rest).containsIgnoringCase("duplicate");
            assertThat(r.detail()).as(rest).startsWith("Duplicate field '").doesNotContain("Feature", "ObjectNode");
        }
        assertThat(beat(codec.decode(utf8(base + "\"load\":{\"inFlight\":1}}"))).state())
                .isEqualTo(NodeState.UP);
    }

    @Test
    void readsPrefillAndTakesItsAbsenceAsUnknown() {
        Heartbeat hb = beat(codec.decode(Fixtures.read("valid/model-info-prefill.json")));

        assertThat(hb.modelInfo()).extracting(ModelInfo::name, ModelInfo::prefill).containsExactly(
                tuple("llama3.2:3b", true), tuple("gemma3:4b", false), tuple("qwen3-coder:30b", null));
        String base = "{\"v\":1,\"nodeId\":\"gpu-a\",\"url\":\"http://h:1\",\"state\":\"UP\",\"intervalMs\":1000,";
        assertThat(beat(codec.decode(utf8(base + "\"modelInfo\":[{\"name\":\"m\",\"prefill\":null}]}")))
                .modelInfo().get(0).prefill()).as("JSON null is absent").isNull();
        Rejection notABoolean = rejection(codec.decode(
                utf8(base + "\"modelInfo\":[{\"name\":\"m\",\"prefill\":\"true\"}]}")));
        assertThat(notABoolean.rule()).isEqualTo(Rule.WRONG_TYPE);
        assertThat(notABoolean.field()).isEqualTo("modelInfo[0].prefill");
        assertThat(rejection(codec.decode(utf8(base + "\"modelInfo\":[{\"name\":\"m\",\"prefill\":1}]}"))).rule())
                .isEqualTo(Rule.WRONG_TYPE);
    }

    /**
     * A scheduler must take heartbeats from agents newer than itself: the decoder reads the fields it
     * knows of each model and skips the others, which is how one that predates {@code prefill} reads
     * a model that has it.
     */
    @Test
    void skipsModelFieldsItDoesNotKnow() {
        String base = "{\"v\":1,\"nodeId\":\"gpu-a\",\"url\":\"http://h:1\",\"state\":\"UP\",\"intervalMs\":1000,";

        Heartbeat hb = beat(codec.decode(utf8(base + "\"modelInfo\":[{\"name\":\"m\",\"digest\":\"d\",\"prefill\":true,"
                + "\"template\":{\"kind\":\"messages\"},\"renderers\":[\"x\"]}]}")));

        assertThat(hb.modelInfo()).containsExactly(new ModelInfo("m", null, "d", null, null, true));
    }

    @Test
    void writesThePrefillSpeedOnlyWhenKnownAndReadsItBack() {
        Heartbeat original = Heartbeat.builder("gpu-p", "http://gpu-p:8080")
                .load(Load.UNKNOWN.withPrefillTps(514.037))
                .build();

        String json = new String(codec.encode(original), StandardCharsets.UTF_8);

        assertThat(json).contains("\"load\":{\"prefillTps\":514.037}");
        assertThat(beat(codec.decode(codec.encode(original)))).isEqualTo(original);
        assertThat(beat(codec.decode(codec.encodePretty(original).getBytes(StandardCharsets.UTF_8))))
                .isEqualTo(original);
        assertThat(new String(codec.encode(Heartbeat.builder("gpu-p", "http://gpu-p:8080")
                .load(new Load(1, 0, 0.5, 0.25)).build()), StandardCharsets.UTF_8))
                .contains("\"load\":{\"inFlight\":1,\"queued\":0,\"kvCacheUsage\":0.5,\"prefixCacheHitRate\":0.25}");
    }

    @Test
    void readsThePrefillSpeedAndTakesItsAbsenceAsUnknown() {
        assertThat(beat(codec.decode(Fixtures.read("valid/load-prefill-tps.json"))).load())
                .isEqualTo(new Load(1, 0, null, null, 514.037));
        assertThat(beat(codec.decode(Fixtures.read("valid/full.json"))).load().prefillTps())
                .as("a heartbeat from an agent that predates it").isNull();
        String base = "{\"v\":1,\"nodeId\":\"gpu-a\",\"url\":\"http://h:1\",\"state\":\"UP\",\"intervalMs\":1000,";
        assertThat(beat(codec.decode(utf8(base + "\"load\":{\"inFlight\":2,\"prefillTps\":null}}"))).load())
                .as("JSON null is absent").isEqualTo(new Load(2, null, null));
        assertThat(beat(codec.decode(utf8(base + "\"load\":{\"prefillTps\":12000}}"))).load().prefillTps())
                .as("an integer is a number too").isEqualTo(12000.0);
        assertThat(beat(codec.decode(utf8(base + "\"load\":{\"prefillTps\":10000000}}"))).load().prefillTps())
                .isEqualTo(1.0e7);
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "0.0", "-5", "10000000.5", "1e400"})
    void rejectsAPrefillSpeedOutOfRange(String value) {
        String json = "{\"v\":1,\"nodeId\":\"gpu-a\",\"url\":\"http://h:1\",\"state\":\"UP\",\"intervalMs\":1000,"
                + "\"load\":{\"prefillTps\":" + value + "}}";

        Rejection r = rejection(codec.decode(utf8(json)));

        assertThat(r.rule()).as(r.toString()).isEqualTo(Rule.OUT_OF_RANGE);
        assertThat(r.field()).isEqualTo("load.prefillTps");
        assertThat(r.detail()).startsWith("must be above 0 and at most 10000000 prompt tokens per second, was ");
    }

    @Test
    void refusesToBuildAHeartbeatWithAPrefillSpeedThatIsNotFinite() {
        for (double bad : new double[] {Double.NaN, Double.POSITIVE_INFINITY, -1.0, 0.0}) {
            assertThatThrownBy(() -> Heartbeat.builder("gpu-a", "http://h:1")
                    .load(Load.UNKNOWN.withPrefillTps(bad)).build())
                    .as("prefillTps %s", bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("out_of_range at load.prefillTps");
        }
    }

    @Test
    void carriesAnOptionalCapacityAndRejectsOneOutOfRange() {
        Heartbeat withCapacity = Heartbeat.builder("gpu-c", "http://gpu-c:8000").capacity(128).build();
        String json = new String(codec.encode(withCapacity), StandardCharsets.UTF_8);

        assertThat(json).contains("\"capacity\":128");
        assertThat(beat(codec.decode(codec.encode(withCapacity))).capacity()).isEqualTo(128);
        assertThat(new String(codec.encode(Heartbeat.builder("gpu-c", "http://gpu-c:8000").build()),
                StandardCharsets.UTF_8)).doesNotContain("capacity");
        String base = "{\"v\":1,\"nodeId\":\"gpu-a\",\"url\":\"http://h:1\",\"state\":\"UP\",\"intervalMs\":1000,";
        assertThat(beat(codec.decode(utf8(base + "\"models\":[]}"))).capacity()).isNull();
        Rejection zero = rejection(codec.decode(utf8(base + "\"capacity\":0}")));
        assertThat(zero.rule()).isEqualTo(Rule.OUT_OF_RANGE);
        assertThat(zero.field()).isEqualTo("capacity");
        assertThat(rejection(codec.decode(utf8(base + "\"capacity\":\"four\"}"))).rule()).isEqualTo(Rule.WRONG_TYPE);
        assertThat(rejection(codec.decode(utf8(base + "\"capacity\":100001}"))).rule()).isEqualTo(Rule.OUT_OF_RANGE);
    }

    @Test
    void rejectsCatalogueFieldsThatBreakTheirLimits() {
        String base = "{\"v\":1,\"nodeId\":\"gpu-a\",\"url\":\"http://h:1\",\"state\":\"UP\",\"intervalMs\":1000,";
        assertThat(rejection(codec.decode(utf8(base + "\"modelInfo\":[{\"size\":1}]}"))).field())
                .isEqualTo("modelInfo[0].name");
        assertThat(rejection(codec.decode(utf8(base + "\"modelInfo\":[{\"name\":\"m\",\"size\":-1}]}"))).rule())
                .isEqualTo(Rule.OUT_OF_RANGE);
        assertThat(rejection(codec.decode(utf8(base + "\"modelInfo\":{}}"))).rule()).isEqualTo(Rule.WRONG_TYPE);
        assertThat(rejection(codec.decode(utf8(base + "\"modelInfo\":[{\"name\":\"m\",\"digest\":\""
                + "d".repeat(101) + "\"}]}"))).rule()).isEqualTo(Rule.VALUE_TOO_LONG);
        StringBuilder many = new StringBuilder(base + "\"loaded\":[");
        for (int i = 0; i <= HeartbeatRules.MAX_LOADED; i++) {
            many.append(i == 0 ? "" : ",").append("{\"name\":\"m").append(i).append("\"}");
        }
        assertThat(rejection(codec.decode(utf8(many + "]}"))).rule()).isEqualTo(Rule.TOO_MANY_ITEMS);
        assertThat(rejection(codec.decode(utf8(base + "\"loaded\":[{\"name\":\"m\",\"contextLength\":\"x\"}]}"))).rule())
                .isEqualTo(Rule.WRONG_TYPE);
    }

    @Test
    void encodesVersionOneAndLeavesOutAbsentFields() {
        String json = new String(codec.encode(Heartbeat.builder("gpu-a", "http://h:1").build()),
                StandardCharsets.UTF_8);

        assertThat(json).isEqualTo(
                "{\"v\":1,\"nodeId\":\"gpu-a\",\"url\":\"http://h:1\",\"state\":\"UP\",\"weight\":1,"
                        + "\"intervalMs\":1000,\"models\":[]}");
    }

    @Test
    void decodesARecordKeyedByNodeId() {
        byte[] value = Fixtures.read("valid/minimal.json");

        assertThat(codec.decodeRecord(utf8("gpu-a"), value)).isInstanceOf(Decoded.Beat.class);
        assertThat(codec.decodeRecord(utf8("gpu-a"), null)).isEqualTo(new Decoded.Leave("gpu-a"));
    }

    @Test
    void rejectsARecordWhoseKeyDiffersFromItsNodeId() {
        Decoded decoded = codec.decodeRecord(utf8("gpu-b"), Fixtures.read("valid/minimal.json"));

        assertThat(rejection(decoded).rule()).isEqualTo(Rule.KEY_MISMATCH);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "has space", "slash/no"})
    void rejectsTombstonesWithInvalidKeys(String key) {
        assertThat(rejection(codec.decodeRecord(utf8(key), null)).rule()).isEqualTo(Rule.INVALID_KEY);
    }

    @Test
    void rejectsRecordsWithoutKeyOrWithBinaryKey() {
        assertThat(rejection(codec.decodeRecord(null, null)).rule()).isEqualTo(Rule.INVALID_KEY);
        assertThat(rejection(codec.decodeRecord(new byte[] {(byte) 0xff, 0x41}, null)).rule())
                .isEqualTo(Rule.INVALID_KEY);
    }

    @Test
    void neverThrowsOnArbitraryBytes() {
        Random random = new Random(42);
        byte[] valid = Fixtures.read("valid/full.json");
        for (int i = 0; i < 5_000; i++) {
            byte[] mutated = valid.clone();
            int flips = 1 + random.nextInt(4);
            for (int f = 0; f < flips; f++) {
                mutated[random.nextInt(mutated.length)] = (byte) random.nextInt(256);
            }
            Decoded decoded = codec.decode(mutated);
            assertThat(decoded).isNotNull();
        }
    }

    @Test
    void refusesToBuildAnInvalidHeartbeat() {
        assertThatThrownBy(() -> Heartbeat.builder("gpu-a", "http://h:1").weight(0).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("out_of_range at weight");
        assertThatThrownBy(() -> Heartbeat.builder("bad id", "http://h:1").build())
                .hasMessageContaining("invalid_node_id");
    }

    private static Heartbeat beat(Decoded decoded) {
        assertThat(decoded).as(decoded.toString()).isInstanceOf(Decoded.Beat.class);
        return ((Decoded.Beat) decoded).heartbeat();
    }

    private static Rejection rejection(Decoded decoded) {
        assertThat(decoded).isInstanceOf(Decoded.Rejected.class);
        return ((Decoded.Rejected) decoded).rejection();
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}

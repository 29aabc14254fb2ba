package io.heartgate.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.core.JsonFactory;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Holds the streaming reader to the tree reader's answers: it reads what agents send, and whatever
 * it reads, or declines, the codec answers exactly as the tree alone would, rejections included.
 */
class StreamingReaderTest {

    private final HeartbeatCodec codec = new HeartbeatCodec();
    private final StreamingReader reader = new StreamingReader(JsonFactory.builder().build());

    @Test
    void everyFixtureDecodesAsTheTreeAloneDecodesIt() throws IOException, URISyntaxException {
        List<Path> fixtures = fixtures();
        assertThat(fixtures).hasSizeGreaterThan(40);
        for (Path fixture : fixtures) {
            byte[] json = Files.readAllBytes(fixture);
            assertThat(codec.decode(json)).as(fixture.toString()).isEqualTo(codec.decodeTree(json));
        }
    }

    @Test
    void readsTheContractsFieldsItselfAndLeavesUnknownOnesToTheTree() {
        for (String name : List.of("minimal", "full", "null-optionals", "model-info-prefill", "load-prefill-tps")) {
            byte[] json = Fixtures.read("valid/" + name + ".json");
            Heartbeat read = reader.read(json);
            assertThat(read).as(name).isNotNull().isEqualTo(((Decoded.Beat) codec.decodeTree(json)).heartbeat());
        }
        assertThat(reader.read(Fixtures.read("valid/unknown-fields.json"))).isNull();
        assertThat(codec.decode(Fixtures.read("valid/unknown-fields.json"))).isInstanceOf(Decoded.Beat.class);
    }

    @Test
    void readsJsonsOtherSpellingsOfTheSameValues() {
        String json = "{\"load\":{\"kvCacheUsage\":1,\"prefixCacheHitRate\":2.5e-1,\"inFlight\":null},"
                + "\"models\":[\"a\\u003ab\",\"a:b\",\"c\"],\"state\":\"DRAINING\",\"url\":\"http://h:1\","
                + "\"v\":7,\"intervalMs\":1000,\"nodeId\":\"n\\u002d1\",\"seq\":9000000000,\"gpus\":[],"
                + "\"modelInfo\":null,\"sentAt\":\"2026-12-06T10:00:00+01:00\"}";
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);

        Heartbeat read = reader.read(bytes);

        assertThat(read).isNotNull().isEqualTo(((Decoded.Beat) codec.decodeTree(bytes)).heartbeat());
        assertThat(read.nodeId()).isEqualTo("n-1");
        assertThat(read.models()).containsExactly("a:b", "c");
        assertThat(read.load()).isEqualTo(new Load(null, null, 1.0, 0.25));
        assertThat(read.seq()).isEqualTo(9_000_000_000L);
        assertThat(read.sentAt()).isEqualTo(Instant.parse("2026-12-06T09:00:00Z"));
    }

    @Test
    void skipsANewerAgentsPlainFieldsItselfAndLeavesStructuresAndRepeatsToTheTree() {
        String base = "{\"v\":2,\"nodeId\":\"n\",\"url\":\"http://h:1\",\"state\":\"UP\",\"intervalMs\":1000,"
                + "\"gpus\":[{\"name\":\"H100\",\"uuid\":\"GPU-1\",\"temperatureC\":38}],";
        byte[] plain = (base + "\"region\":\"eu\",\"priority\":null,\"zone\":3}").getBytes(StandardCharsets.UTF_8);
        byte[] repeated = (base + "\"region\":\"eu\",\"region\":\"us\"}").getBytes(StandardCharsets.UTF_8);
        byte[] structured = (base + "\"labels\":{\"a\":1,\"a\":2}}").getBytes(StandardCharsets.UTF_8);

        Heartbeat read = reader.read(plain);

        assertThat(read).isNotNull().isEqualTo(((Decoded.Beat) codec.decodeTree(plain)).heartbeat());
        assertThat(read.gpus()).containsExactly(new Gpu("H100", null, null, null));
        assertThat(reader.read(repeated)).isNull();
        assertThat(codec.decode(repeated)).isEqualTo(codec.decodeTree(repeated)).isInstanceOf(Decoded.Rejected.class);
        assertThat(reader.read(structured)).isNull();
        assertThat(codec.decode(structured)).isEqualTo(codec.decodeTree(structured)).isInstanceOf(Decoded.Rejected.class);
    }

    @Test
    void countsModelsBeforeDroppingRepeatsAsTheTreeDoes() {
        StringBuilder models = new StringBuilder("\"m0\"");
        for (int i = 1; i <= HeartbeatRules.MAX_MODELS; i++) {
            models.append(",\"m").append(i % 1000).append('"'); // 1,025 entries, 1,000 names
        }
        byte[] json = ("{\"v\":1,\"nodeId\":\"n\",\"url\":\"http://h:1\",\"state\":\"UP\",\"intervalMs\":1000,"
                + "\"models\":[" + models + "]}").getBytes(StandardCharsets.UTF_8);

        assertThat(reader.read(json)).isNull();
        assertThat(codec.decode(json)).isEqualTo(codec.decodeTree(json)).isInstanceOf(Decoded.Rejected.class);
    }

    @Test
    void randomHeartbeatsAndTheirMutantsDecodeAsTheTreeAloneDecodesThem() {
        Random random = new Random(20261206);
        int streamed = 0;
        int mutants = 0;
        int rejected = 0;
        for (int i = 0; i < 2_000; i++) {
            Heartbeat hb = randomHeartbeat(random, i);
            byte[] json = codec.encode(hb);
            Heartbeat read = reader.read(json);
            assertThat(read).as(new String(json, StandardCharsets.UTF_8)).isEqualTo(hb);
            streamed++;
            for (int m = 0; m < 10; m++) {
                byte[] mutant = mutate(new String(json, StandardCharsets.UTF_8), random).getBytes(StandardCharsets.UTF_8);
                Decoded tree = codec.decodeTree(mutant);
                assertThat(codec.decode(mutant)).as(new String(mutant, StandardCharsets.UTF_8)).isEqualTo(tree);
                mutants++;
                rejected += tree instanceof Decoded.Rejected ? 1 : 0;
            }
        }
        assertThat(streamed).isEqualTo(2_000);
        // The mutants reach both outcomes in numbers, so the comparison above tests each.
        assertThat(rejected).isBetween(mutants / 5, mutants * 4 / 5);
    }

    private static Heartbeat randomHeartbeat(Random r, int i) {
        Heartbeat.Builder b = Heartbeat.builder("gpu-" + i, "http://10.1." + (i / 250) + "." + (i % 250) + ":" + (8000 + r.nextInt(4000)))
                .state(NodeState.values()[r.nextInt(NodeState.values().length)])
                .weight(1 + r.nextInt(1000)).intervalMs(100 + r.nextInt(59_901));
        if (r.nextBoolean()) {
            b.instance("6f1c0b1e-" + r.nextInt(1 << 20)).seq((long) r.nextInt(Integer.MAX_VALUE) * (r.nextBoolean() ? 1 : 5));
        }
        if (r.nextBoolean()) {
            b.sentAt(Instant.ofEpochMilli(1_790_000_000_000L + r.nextInt(1_000_000_000)));
        }
        if (r.nextBoolean()) {
            b.backend(List.of("ollama", "vllm", "sglang", "llamacpp", "tgi").get(r.nextInt(5)));
        }
        List<String> models = new ArrayList<>();
        for (int m = r.nextInt(4); m > 0; m--) {
            models.add("model-" + r.nextInt(6) + ":" + (1 + r.nextInt(70)) + "b");
        }
        b.models(models.stream().distinct().toList());
        if (r.nextBoolean()) {
            b.load(new Load(r.nextBoolean() ? r.nextInt(64) : null, r.nextBoolean() ? r.nextInt(64) : null,
                    r.nextBoolean() ? r.nextInt(1001) / 1000.0 : null, r.nextBoolean() ? r.nextDouble() : null,
                    r.nextBoolean() ? 1 + r.nextInt(50_000) * 1.5 : null));
        }
        List<Gpu> gpus = new ArrayList<>();
        for (int g = r.nextInt(9); g > 0; g--) {
            gpus.add(new Gpu(r.nextBoolean() ? "NVIDIA H100 80GB HBM3" : null, r.nextBoolean() ? r.nextInt(101) / 100.0 : null,
                    r.nextBoolean() ? (long) r.nextInt(81_559) : null, r.nextBoolean() ? 81_559L : null));
        }
        b.gpus(gpus);
        if (r.nextInt(4) == 0 && !models.isEmpty()) {
            List<ModelInfo> info = new ArrayList<>();
            for (String model : b.build().models()) {
                ModelInfo.Details details = r.nextBoolean() ? null : new ModelInfo.Details(null, "gguf", "llama",
                        r.nextBoolean() ? List.of("llama") : List.of(), "8.0B", "Q4_K_M");
                info.add(new ModelInfo(model, r.nextBoolean() ? 4_920_753_328L : null, "sha256:" + Integer.toHexString(r.nextInt()),
                        r.nextBoolean() ? "2026-11-30T16:00:00Z" : null, details, r.nextBoolean() ? r.nextBoolean() : null));
            }
            b.modelInfo(info);
            b.loaded(List.of(new LoadedModel(b.build().models().get(0), 5_000_000_000L, r.nextBoolean() ? 5_000_000_000L : null,
                    "2026-12-06T10:05:00Z", r.nextBoolean() ? 8192 : null)));
        }
        if (r.nextBoolean()) {
            b.capacity(1 + r.nextInt(256));
        }
        return b.build();
    }

    /** One random edit of a message: a field repeated, retyped, nulled or unknown; a byte changed; cut or extended. */
    private static String mutate(String json, Random r) {
        List<Integer> keys = new ArrayList<>();
        for (int at = json.indexOf('"'); at >= 0; at = json.indexOf('"', at + 1)) {
            int end = json.indexOf('"', at + 1);
            if (end < 0) {
                break;
            }
            if (end + 1 < json.length() && json.charAt(end + 1) == ':') {
                keys.add(at);
            }
            at = end;
        }
        int key = keys.get(r.nextInt(keys.size()));
        int colon = json.indexOf("\":", key) + 1;
        int valueEnd = valueEnd(json, colon + 1);
        String name = json.substring(key, colon);
        String value = json.substring(colon + 1, valueEnd);
        return switch (r.nextInt(9)) {
            case 0 -> json.substring(0, valueEnd) + "," + name + ":" + value + json.substring(valueEnd); // repeated
            case 1 -> json.substring(0, colon + 1) + "null" + json.substring(valueEnd);
            case 2 -> json.substring(0, colon + 1) + List.of("\"1\"", "1", "1.5", "-1", "true", "[]", "{}",
                    "99999999999", "1e3", "12345678901234567890123", "[null]", "[\"a\",null]", "[\"a\",\"a\"]",
                    "[{}]", "{\"name\":null}").get(r.nextInt(15)) + json.substring(valueEnd);
            case 3 -> json.substring(0, valueEnd) + ",\"extra\":" + List.of("1", "{\"a\":1,\"a\":2}", "[null]", "\"x\"")
                    .get(r.nextInt(4)) + json.substring(valueEnd);
            case 4 -> json.substring(0, key) + json.substring(Math.min(json.length() - 1, valueEnd + 1)); // removed
            case 5 -> json.substring(0, r.nextInt(json.length())); // cut
            case 6 -> json + List.of(" ", "x", "{}", " \n").get(r.nextInt(4));
            case 7 -> {
                int at = r.nextInt(json.length());
                yield json.substring(0, at) + "0\",:{}[]-.e1a\\ ".charAt(r.nextInt(15)) + json.substring(at + 1);
            }
            default -> {
                int at = r.nextInt(json.length());
                yield json.substring(0, at) + json.substring(at + 1);
            }
        };
    }

    /** Where the JSON value starting at {@code from} ends (exclusive); good enough for compact output. */
    private static int valueEnd(String json, int from) {
        int depth = 0;
        boolean string = false;
        for (int i = from; i < json.length(); i++) {
            char c = json.charAt(i);
            if (string) {
                if (c == '\\') {
                    i++;
                } else if (c == '"') {
                    string = false;
                    if (depth == 0) {
                        return i + 1;
                    }
                }
            } else if (c == '"') {
                string = true;
            } else if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                if (depth == 0) {
                    return i;
                }
                depth--;
                if (depth == 0) {
                    return i + 1;
                }
            } else if (c == ',' && depth == 0) {
                return i;
            }
        }
        return json.length();
    }

    private static List<Path> fixtures() throws IOException, URISyntaxException {
        Path root = Path.of(StreamingReaderTest.class.getResource("/heartbeats").toURI());
        try (Stream<Path> files = Files.walk(root)) {
            return files.filter(p -> p.toString().endsWith(".json")).sorted().toList();
        }
    }
}

package io.heartgate.scheduler.proxy.stage;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** {@code --force-usage}'s rewrite of OpenAI streaming bodies, byte for byte. */
class ForceUsageTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    private static String forced(String body) {
        byte[] out = ForceUsage.withUsage(body.getBytes(StandardCharsets.UTF_8));
        return out == null ? null : new String(out, StandardCharsets.UTF_8);
    }

    /** Asserts the rewrite is {@code expected} and that a JSON parser keeping the last field reads the option as true. */
    private static void assertForced(String body, String expected) throws Exception {
        String out = forced(body);
        assertThat(out).isEqualTo(expected);
        JsonNode tree = JSON.readTree(out);
        assertThat(tree.path("stream_options").path("include_usage").asBoolean()).isTrue();
    }

    @Test
    void aRequestWithoutTheOptionGetsItFirst() throws Exception {
        assertForced("{\"model\":\"m\",\"stream\":true}",
                "{\"stream_options\":{\"include_usage\":true},\"model\":\"m\",\"stream\":true}");
        assertForced("  \n{ \"stream\" : true }", "  \n{\"stream_options\":{\"include_usage\":true}, \"stream\" : true }");
    }

    @Test
    void aNullOrEmptyOptionIsFilledIn() throws Exception {
        assertForced("{\"stream\":true,\"stream_options\":null}",
                "{\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
        assertForced("{\"stream\":true,\"stream_options\":{}}",
                "{\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
        assertForced("{\"stream\":true,\"stream_options\":{ }}",
                "{\"stream\":true,\"stream_options\":{\"include_usage\":true }}");
    }

    @Test
    void otherStreamOptionsAreKept() throws Exception {
        assertForced("{\"stream\":true,\"stream_options\":{\"continuous_usage_stats\":true,\"x\":{\"include_usage\":false}}}",
                "{\"stream\":true,\"stream_options\":{\"include_usage\":true,\"continuous_usage_stats\":true,"
                        + "\"x\":{\"include_usage\":false}}}");
    }

    @Test
    void aClientsOwnFalseOrNullBecomesTrueSoTheStreamIsCounted() throws Exception {
        assertForced("{\"stream\":true,\"stream_options\":{\"include_usage\":false}}",
                "{\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
        assertForced("{\"stream\":true,\"stream_options\":{ \"include_usage\" : null , \"a\":1}}",
                "{\"stream\":true,\"stream_options\":{ \"include_usage\" : true , \"a\":1}}");
    }

    @Test
    void theLastOfRepeatedFieldsIsTheOneChangedAsTheServersReadIt() throws Exception {
        assertForced("{\"stream_options\":{\"include_usage\":true},\"stream\":true,\"stream_options\":{\"include_usage\":false}}",
                "{\"stream_options\":{\"include_usage\":true},\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
        assertForced("{\"stream\":true,\"stream_options\":{\"include_usage\":false,\"include_usage\":false}}",
                "{\"stream\":true,\"stream_options\":{\"include_usage\":false,\"include_usage\":true}}");
        assertForced("{\"stream_options\":null,\"stream\":true,\"stream_options\":{\"include_usage\":false}}",
                "{\"stream_options\":null,\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
    }

    @Test
    void theLastStreamFieldDecidesAsTheServersReadIt() throws Exception {
        assertForced("{\"stream\":false,\"model\":\"m\",\"stream\":true}",
                "{\"stream_options\":{\"include_usage\":true},\"stream\":false,\"model\":\"m\",\"stream\":true}");
        assertThat(forced("{\"stream\":true,\"model\":\"m\",\"stream\":false}"))
                .as("not a stream to the node, which refuses stream_options without one").isNull();
        assertThat(forced("{\"stream\":false}")).isNull();
        assertThat(forced("{\"model\":\"m\"}")).isNull();
    }

    @Test
    void aStreamFlagIsReadAsPydanticReadsIt() throws Exception {
        // vLLM streams {"stream":1} and {"stream":"true"}; left alone, such a stream escapes tpm=.
        assertForced("{\"stream\":1}", "{\"stream_options\":{\"include_usage\":true},\"stream\":1}");
        assertForced("{\"stream\":\"True\",\"stream_options\":null}",
                "{\"stream\":\"True\",\"stream_options\":{\"include_usage\":true}}");
        assertForced("{\"stream\":1.0}", "{\"stream_options\":{\"include_usage\":true},\"stream\":1.0}");
        assertThat(forced("{\"stream\":\"off\"}")).isNull();
        assertThat(forced("{\"stream\":0}")).isNull();
        assertThat(forced("{\"stream\":2}")).as("refused by the node").isNull();
        assertThat(forced("{\"stream\":\"maybe\"}")).isNull();
    }

    @Test
    void offsetsCountBytesNotCharacters() throws Exception {
        assertForced("{\"messages\":[{\"role\":\"user\",\"content\":\"h\u00e9llo \u2713 \uD83D\uDE00 \\\"stream_options\\\"\"}],"
                        + "\"stream\":true,\"stream_options\":{\"include_usage\":false}}",
                "{\"messages\":[{\"role\":\"user\",\"content\":\"h\u00e9llo \u2713 \uD83D\uDE00 \\\"stream_options\\\"\"}],"
                        + "\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
    }

    @Test
    void anIncludeUsageThatTheServersReadAsFalseIsOverridden() throws Exception {
        for (String no : new String[] {"0", "0.0", "\"false\"", "\"no\"", "\"OFF\"", "\"n\"", "\"f\\u0061lse\""}) {
            assertForced("{\"stream\":true,\"stream_options\":{\"include_usage\":" + no + ",\"a\":1}}",
                    "{\"stream\":true,\"stream_options\":{\"include_usage\":true,\"a\":1}}");
        }
        assertThat(forced("{\"stream\":true,\"stream_options\":{\"include_usage\":\"yes\"}}")).as("true already").isNull();
        assertThat(forced("{\"stream\":true,\"stream_options\":{\"include_usage\":2}}")).as("refused by the node")
                .isNull();
    }

    @Test
    void whatAlreadyAsksOrIsNotForUsToJudgeIsLeftAlone() {
        assertThat(forced("{\"stream\":true,\"stream_options\":{\"include_usage\":true}}")).isNull();
        assertThat(forced("{\"stream\":true,\"stream_options\":\"yes\"}")).as("the node refuses the type").isNull();
        assertThat(forced("{\"stream\":true,\"stream_options\":{\"include_usage\":1}}")).isNull();
        assertThat(forced("[{\"stream\":true}]")).isNull();
        assertThat(forced("{\"stream\":true,")).as("broken").isNull();
        assertThat(forced("{\"stream\":true} {}")).as("trailing").isNull();
        assertThat(forced("")).isNull();
    }

    @Test
    void theChunkIsTheProxysAloneWhereTheClientDidNotAskAsTheServersReadIt() {
        for (String unasked : new String[] {"{\"stream\":true}", "{\"stream\":true,\"stream_options\":null}",
                "{\"stream\":true,\"stream_options\":{\"include_usage\":false}}",
                "{\"stream\":true,\"stream_options\":{\"include_usage\":null,\"continuous_usage_stats\":true}}",
                "{\"stream\":true,\"stream_options\":{\"include_usage\":\"off\"}}",
                "{\"stream_options\":{\"include_usage\":true},\"stream\":true,\"stream_options\":{\"include_usage\":0}}",
                // Without include_usage: unasked as OpenAI, SGLang and Ollama read it (vLLM alone sends the chunk).
                "{\"stream\":true,\"stream_options\":{}}",
                "{\"stream\":true,\"stream_options\":{\"continuous_usage_stats\":false}}",
                "{\"stream\":true,\"stream_options\":{\"continuous_usage_stats\":true},\"stream_options\":{}}"}) {
            assertThat(ForceUsage.rewrite(unasked.getBytes(StandardCharsets.UTF_8)).unasked()).as(unasked).isTrue();
        }
        // continuous_usage_stats asks vLLM for usage on every chunk, its last included: asked.
        for (String asked : new String[] {"{\"stream\":true,\"stream_options\":{\"continuous_usage_stats\":true}}",
                "{\"stream\":true,\"stream_options\":{\"a\":{\"continuous_usage_stats\":false},\"continuous_usage_stats\":\"yes\"}}"}) {
            assertThat(ForceUsage.rewrite(asked.getBytes(StandardCharsets.UTF_8)).unasked()).as(asked).isFalse();
        }
    }

    @Test
    void aByteOrderMarkIsKeptInFront() throws Exception {
        String out = forced("\uFEFF{\"stream\":true}");
        assertThat(out).isEqualTo("\uFEFF{\"stream_options\":{\"include_usage\":true},\"stream\":true}");
    }

    @Test
    void aBodyInUtf16IsLeftAsItIs() {
        for (Charset cs : new Charset[] {StandardCharsets.UTF_16BE, StandardCharsets.UTF_16LE}) {
            assertThat(ForceUsage.withUsage("{\"stream\":true}".getBytes(cs))).isNull();
            assertThat(ForceUsage.withUsage("{\"stream\":true,\"stream_options\":null}".getBytes(cs))).isNull();
        }
    }
}

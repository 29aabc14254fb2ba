package io.heartgate.scheduler.proxy.policy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class HeaderPolicyTest {

    /** Asserts exactly these headers, names compared without case. */
    private static void assertHeaders(MapHeaders h, Map<String, String> expected) {
        Map<String, String> want = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        want.putAll(expected);
        assertThat(h.map.keySet()).containsExactlyElementsOf(want.keySet());
        want.forEach((name, value) -> assertThat(h.get(name)).as(name).isEqualTo(value));
    }

    @Test
    void towardTheNodeHopByHopAndConnectionNamedHeadersGoAndForwardedHeadersAreSet() {
        MapHeaders h = MapHeaders.of("Host", "front.example", "Connection", "keep-alive, X-Private, Content-Length",
                "Keep-Alive", "timeout=5", "X-Private", "secret", "Proxy-Authorization", "Basic x", "TE", "trailers",
                "Trailer", "x", "Transfer-Encoding", "chunked", "Upgrade", "h2c", "Expect", "100-continue",
                "Proxy-Connection", "keep-alive", "Content-Length", "12", "Content-Type", "application/json",
                "Authorization", "Bearer node-key");

        HeaderPolicy.towardNode(h, "10.0.0.9", false);

        assertHeaders(h, Map.of("Host", "front.example", "Content-Length", "12",
                "Content-Type", "application/json", "Authorization", "Bearer node-key", "X-Forwarded-For", "10.0.0.9",
                "X-Forwarded-Proto", "http", "X-Forwarded-Host", "front.example"));
    }

    @Test
    void anEarlierForwardedForIsExtendedAndNoHostMeansNoForwardedHost() {
        MapHeaders h = MapHeaders.of("X-Forwarded-For", "1.2.3.4, 5.6.7.8");

        HeaderPolicy.towardNode(h, "10.0.0.9", true);

        assertThat(h.map).containsEntry("x-forwarded-for", "1.2.3.4, 5.6.7.8, 10.0.0.9")
                .containsEntry("x-forwarded-proto", "https") // the client came over TLS
                .doesNotContainKey("x-forwarded-host");
    }

    @Test
    void theNodeGetsItsOwnHost() {
        MapHeaders h = MapHeaders.of("Host", "front.example");

        HeaderPolicy.hostForNode(h, "gpu-a.internal:11434");

        assertThat(h.get("host")).isEqualTo("gpu-a.internal:11434");
    }

    @Test
    void towardTheClientHopByHopGoesTheNodeIsNamedAndTheLengthIsKept() {
        MapHeaders h = MapHeaders.of("Connection", "keep-alive, X-Node-Debug", "Keep-Alive", "timeout=5",
                "X-Node-Debug", "1", "Content-Length", "2", "Content-Type", "application/json", "Upgrade", "x");

        HeaderPolicy.ResponsePlan plan = HeaderPolicy.towardClient(h, 200, false, false, true, "gpu-a");

        assertThat(plan).isEqualTo(new HeaderPolicy.ResponsePlan(false, true));
        assertHeaders(h, Map.of("Content-Length", "2", "Content-Type", "application/json", "X-Upstream-Node", "gpu-a"));
    }

    @Test
    void aBodyWithoutLengthOrChunksIsChunkedForHttp11Clients() {
        MapHeaders h = MapHeaders.of("Content-Type", "text/plain");

        HeaderPolicy.ResponsePlan plan = HeaderPolicy.towardClient(h, 200, false, false, true, "n1");

        assertThat(h.get("transfer-encoding")).isEqualTo("chunked");
        assertThat(plan.keepClient()).isTrue();
        assertThat(h.contains("connection")).isFalse();
    }

    @Test
    void responsesWithoutABodyAreNotChunked() {
        for (int status : new int[] {204, 304}) {
            MapHeaders h = MapHeaders.of();
            HeaderPolicy.towardClient(h, status, false, false, true, "n1");
            assertThat(h.contains("transfer-encoding")).as("status %d", status).isFalse();
        }
        MapHeaders head = MapHeaders.of();
        HeaderPolicy.towardClient(head, 200, true, false, true, "n1");
        assertThat(head.contains("transfer-encoding")).as("HEAD").isFalse();
    }

    @Test
    void anHttp10ClientGetsAChunkedBodyEndedByClosing() {
        MapHeaders h = MapHeaders.of("Transfer-Encoding", "chunked");

        HeaderPolicy.ResponsePlan plan = HeaderPolicy.towardClient(h, 200, false, true, true, "n1");

        assertThat(plan.keepClient()).isFalse();
        assertThat(h.contains("transfer-encoding")).isFalse();
        assertThat(h.get("connection")).isEqualTo("close");
    }

    @Test
    void anHttp10ClientThatKeepsItsConnectionIsToldSo() {
        MapHeaders h = MapHeaders.of("Content-Length", "2");

        HeaderPolicy.ResponsePlan plan = HeaderPolicy.towardClient(h, 200, false, true, true, "n1");

        assertThat(plan.keepClient()).isTrue();
        assertThat(h.get("connection")).isEqualTo("keep-alive");
    }

    @Test
    void aClientThatMayNotStayIsToldTheConnectionCloses() {
        MapHeaders h = MapHeaders.of("Content-Length", "2");

        HeaderPolicy.ResponsePlan plan = HeaderPolicy.towardClient(h, 200, false, false, false, "n1");

        assertThat(plan.keepClient()).isFalse();
        assertThat(h.get("connection")).isEqualTo("close");
    }

    @Test
    void sseAndNdjsonStreamsAreMarkedSoNothingInFrontBuffersThem() {
        for (String type : new String[] {"text/event-stream", "text/event-stream; charset=utf-8",
            "application/x-ndjson"}) {
            MapHeaders h = MapHeaders.of("Content-Type", type, "Transfer-Encoding", "chunked", "Cache-Control", "max-age=60");

            HeaderPolicy.ResponsePlan plan = HeaderPolicy.towardClient(h, 200, false, false, true, "n1");

            assertThat(plan.streaming()).as(type).isTrue();
            assertThat(h.get("cache-control")).isEqualTo("no-cache");
            assertThat(h.get("x-accel-buffering")).isEqualTo("no");
        }
        assertThat(HeaderPolicy.towardClient(MapHeaders.of("Content-Type", "application/json"), 200, false, false, true,
                "n1").streaming()).isFalse();
    }

    @Test
    void chunkedIsFoundAmongOtherCodings() {
        assertThat(HeaderPolicy.isChunked(MapHeaders.of("Transfer-Encoding", "gzip, Chunked"))).isTrue();
        assertThat(HeaderPolicy.isChunked(MapHeaders.of("Transfer-Encoding", "gzip"))).isFalse();
        assertThat(HeaderPolicy.isChunked(MapHeaders.of())).isFalse();
    }
}

package io.heartgate.scheduler.proxy.policy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class RequestFramingTest {

    private static String problem(boolean http10, String uri, List<String> hosts, List<String> te) {
        return RequestFraming.problem(http10 ? "HTTP/1.0" : "HTTP/1.1", "GET", uri, hosts, te, false);
    }

    @Test
    void wellFramedRequestsPass() {
        assertThat(problem(false, "/v1/chat/completions", List.of("front"), List.of())).isNull();
        assertThat(problem(false, "/x", List.of("front"), List.of("Chunked"))).isNull();
        assertThat(problem(true, "/x", List.of(), List.of())).as("HTTP/1.0 needs no Host").isNull();
        assertThat(problem(false, "http://front.example/x", List.of("front.example:80"), List.of())).isNull();
        assertThat(problem(false, "https://Front.Example/x", List.of("front.example:443"), List.of())).isNull();
        assertThat(RequestFraming.problem("HTTP/1.1", "OPTIONS", "*", List.of("front"), List.of(), false)).isNull();
    }

    @Test
    void transferEncodingMustBeExactlyChunkedAndNotOnHttp10() {
        assertThat(problem(false, "/x", List.of("h"), List.of("gzip"))).contains("exactly 'chunked'");
        assertThat(problem(false, "/x", List.of("h"), List.of("gzip, chunked"))).contains("exactly 'chunked'");
        assertThat(problem(false, "/x", List.of("h"), List.of("chunked, gzip"))).contains("exactly 'chunked'");
        assertThat(problem(false, "/x", List.of("h"), List.of("chunked", "chunked"))).contains("exactly 'chunked'");
        assertThat(problem(true, "/x", List.of("h"), List.of("chunked"))).contains("HTTP/1.0");
    }

    @Test
    void otherVersionsTargetsLengthsWithChunksAndFoldedValuesAreRefused() {
        assertThat(RequestFraming.problem("HTTP/1.2", "GET", "/x", List.of("h"), List.of(), false)).contains("version");
        assertThat(RequestFraming.problem("HTTP/1.1", "POST", "/x", List.of("h"), List.of("chunked"), true))
                .contains("both Transfer-Encoding and Content-Length");
        assertThat(problem(false, "/x", List.of("h"), List.of(" chunked"))).as("obs-fold leaves the space")
                .contains("exactly 'chunked'");
        assertThat(problem(false, "ftp://x/y", List.of("h"), List.of())).contains("request target");
        assertThat(problem(false, "a:b", List.of("h"), List.of())).contains("request target");
        assertThat(problem(false, "*", List.of("h"), List.of())).as("* is OPTIONS only").contains("request target");
        assertThat(problem(false, "/x", List.of("a b"), List.of())).contains("not a host[:port]");
        assertThat(problem(false, "/x", List.of("a,b"), List.of())).contains("not a host[:port]");
        assertThat(problem(false, "/x", List.of("evil@h"), List.of())).contains("not a host[:port]");
        assertThat(problem(false, "http://evil@h/x", List.of("h"), List.of())).contains("differs");
        assertThat(problem(false, "/x", List.of("[::1]:8080"), List.of())).isNull();
    }

    @Test
    void http11NeedsExactlyOneHostAgreeingWithAnAbsoluteTarget() {
        assertThat(problem(false, "/x", List.of(), List.of())).contains("needs a Host");
        assertThat(problem(false, "/x", List.of("a", "b"), List.of())).contains("more than one Host");
        assertThat(problem(false, "http://other/x", List.of("front"), List.of())).contains("differs");
        assertThat(problem(false, "http://front:8080/x", List.of("front"), List.of())).contains("differs");
    }

    @Test
    void anAbsoluteTargetIsSentInOriginForm() {
        assertThat(RequestFraming.originForm("http://front.example:8080/v1/models?x=1")).isEqualTo("/v1/models?x=1");
        assertThat(RequestFraming.originForm("HTTPS://front.example")).isEqualTo("/");
        assertThat(RequestFraming.originForm("http://front.example?x=1")).isEqualTo("/?x=1");
        assertThat(RequestFraming.originForm("/already/origin")).isEqualTo("/already/origin");
    }

    @Test
    void pathsAreJudgedAsTheNodesDecodeThem() {
        assertThat(RequestFraming.pathProblem("/v1/chat/completions")).isNull();
        assertThat(RequestFraming.pathProblem("/.well-known/x?a=/../b")).as("dots in a name or the query").isNull();
        assertThat(RequestFraming.pathProblem("/api/pul%6C?x=%2F")).isNull();
        assertThat(RequestFraming.pathProblem("/v1/models/llama3%3A8b")).as("reserved, kept encoded").isNull();
        assertThat(RequestFraming.pathProblem("*")).isNull();
        assertThat(RequestFraming.pathProblem("/api%2Fpull")).contains("slash");
        assertThat(RequestFraming.pathProblem("/v1/models/meta-llama%2FLlama-3.1-8B-Instruct"))
                .as("a model id, as openai-node escapes it").isNull();
        assertThat(RequestFraming.pathProblem("/v1/models%2Fx")).contains("slash");
        assertThat(RequestFraming.pathProblem("/v1/models/..%2F..%2Fapi%2Fpull")).as("dots between escaped slashes")
                .contains("'..' segment");
        assertThat(RequestFraming.pathProblem("/v1/model%73/%2E%2E%2f..%2Fapi%2Fpull")).contains("'..' segment");
        assertThat(RequestFraming.pathProblem("/api%5cpull")).contains("backslash");
        assertThat(RequestFraming.pathProblem("/api/tags%00")).contains("NUL");
        assertThat(RequestFraming.pathProblem("/a/../api/pull")).contains("'..' segment");
        assertThat(RequestFraming.pathProblem("/a/%2e%2E/api/pull")).contains("'..' segment");
        assertThat(RequestFraming.pathProblem("/a/.")).contains("'.' segment");
        assertThat(RequestFraming.pathProblem("/a%G0")).contains("malformed");
        assertThat(RequestFraming.pathProblem("/a%4")).contains("malformed");

        assertThat(RequestFraming.normalPath("/api/pul%6c?x=%6C")).isEqualTo("/api/pull?x=%6C");
        assertThat(RequestFraming.normalPath("/v1/chat%2Dcompletions%7E%41%5F")).isEqualTo("/v1/chat-completions~A_");
        assertThat(RequestFraming.normalPath("/v1/models/llama3%3A8b%25")).isEqualTo("/v1/models/llama3%3A8b%25");
        String plain = "/v1/chat/completions?x=%41";
        assertThat(RequestFraming.normalPath(plain)).isSameAs(plain);
    }
}

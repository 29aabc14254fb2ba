package io.heartgate.scheduler.proxy.policy;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class RequestFramingTest {

    private static String problem(boolean http10, String uri, List<String> hosts, List<String> te) {
        return RequestFraming.problem(http10, uri, hosts, te);
    }

    @Test
    void wellFramedRequestsPass() {
        assertThat(problem(false, "/v1/chat/completions", List.of("front"), List.of())).isNull();
        assertThat(problem(false, "/x", List.of("front"), List.of(" Chunked "))).isNull();
        assertThat(problem(true, "/x", List.of(), List.of())).as("HTTP/1.0 needs no Host").isNull();
        assertThat(problem(false, "http://front.example/x", List.of("front.example:80"), List.of())).isNull();
        assertThat(problem(false, "https://Front.Example/x", List.of("front.example:443"), List.of())).isNull();
        assertThat(problem(false, "*", List.of("front"), List.of())).isNull();
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
}

package io.heartgate.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class HeartbeatRulesTest {

    /** The full check alone: java.net.URI, absolute, http(s), a host or an authority. */
    private static boolean uriAccepts(String url) {
        try {
            URI uri = new URI(url);
            String scheme = uri.getScheme();
            String authority = uri.getRawAuthority();
            return uri.isAbsolute() && (scheme.equalsIgnoreCase("http") || scheme.equalsIgnoreCase("https"))
                    && (uri.getHost() != null || authority != null && !authority.isBlank() && !authority.startsWith(":"));
        } catch (URISyntaxException e) {
            return false;
        }
    }

    @Test
    void aPlainUrlIsOneTheFullCheckAcceptsWithTheSameHost() {
        Random random = new Random(43);
        String alphabet = "ab9Z.-_:/~%?#@[] \u00e9";
        int plain = 0;
        for (int i = 0; i < 200_000; i++) {
            StringBuilder b = new StringBuilder(random.nextBoolean() ? "http://" : "https://");
            int length = random.nextInt(16);
            for (int k = 0; k < length; k++) {
                b.append(alphabet.charAt(random.nextInt(alphabet.length())));
            }
            String url = b.toString();
            if (PlainUrls.matches(url)) {
                plain++;
                assertThat(uriAccepts(url)).as(url).isTrue();
                assertThat(HeartbeatRules.checkUrl(url)).as(url).isEmpty();
                assertThat(PlainUrls.host(url)).as(url).isEqualTo(HeartbeatRules.urlHostByUri(url));
            }
        }
        assertThat(plain).as("random URLs of the plain shape").isGreaterThan(1_000);
    }

    @Test
    void nodeUrlsAreRecognisedAndOthersTakeTheFullCheck() {
        for (String url : List.of("http://127.0.0.1:11434", "http://10.0.3.7:8000/", "https://gpu-node_3.cluster.local:443/v1",
                "http://vllm-0.vllm.default.svc:8000/base/path", "http://h")) {
            assertThat(PlainUrls.matches(url)).as(url).isTrue();
        }
        for (String url : List.of("http://[::1]:8080", "HTTP://host", "http://user@host", "http://host:123456",
                "http://host:", "http://:80", "http:///path", "http://host?x=1", "http://host/a%20b", "ftp://host",
                "http://host:80x", "http://")) {
            assertThat(PlainUrls.matches(url)).as(url).isFalse();
        }
        assertThat(HeartbeatRules.checkUrl("http://[::1]:8080")).isEmpty();
        assertThat(HeartbeatRules.checkUrl("http://:80")).isPresent();
        assertThat(HeartbeatRules.checkUrl("http://host:123456")).isEmpty(); // as before: a registry authority
    }

    @Test
    void nodeIdsKeepTheirRule() {
        assertThat(HeartbeatRules.isValidNodeId("gpu-01.rack_2:a")).isTrue();
        assertThat(HeartbeatRules.isValidNodeId("a".repeat(128))).isTrue();
        assertThat(HeartbeatRules.isValidNodeId("a".repeat(129))).isFalse();
        assertThat(HeartbeatRules.isValidNodeId("")).isFalse();
        assertThat(HeartbeatRules.isValidNodeId(null)).isFalse();
        assertThat(HeartbeatRules.isValidNodeId("gpu 1")).isFalse();
        assertThat(HeartbeatRules.isValidNodeId("gpu/1")).isFalse();
        assertThat(HeartbeatRules.isValidNodeId("gpu\u00e91")).isFalse();
        assertThat(HeartbeatRules.checkNodeId("gpu#1", "nodeId").orElseThrow().detail())
                .isEqualTo("may only contain A-Za-z0-9._:-");
    }
}

package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Scrapes /metrics around a short load with one node failing. */
@ExtendWith(KafkaExtension.class)
class MetricsIT {

    private static final String CHAT = "{\"model\":\"llama3:8b\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

    @Test
    void countersAndHistogramsMoveUnderLoadWithAFailingNode(TestKafka kafka) throws Exception {
        try (Cluster cluster = new Cluster(kafka.bootstrapServers())) {
            for (String id : List.of("gpu-a", "gpu-b", "gpu-c")) {
                Cluster.SimNode sim = cluster.sim(id, c -> c);
                cluster.heartbeat(id, sim.url(), b -> b.models(List.of("llama3:8b")));
            }
            cluster.startScheduler(c -> c.strategy(Strategy.ROUND_ROBIN));
            cluster.awaitRoutable(3);
            String before = scrape(cluster);
            assertThat(value(before, "heartgate_nodes_routable")).isEqualTo(3);
            assertThat(value(before, "heartgate_self_preservation")).isZero();
            assertThat(value(before, "heartgate_heartbeats_accepted_total")).isPositive();

            cluster.kill("gpu-b");
            for (int i = 0; i < 60; i++) {
                assertThat(cluster.post("/v1/chat/completions", CHAT).statusCode()).isEqualTo(200);
            }
            assertThat(cluster.post("/v1/chat/completions", "{\"model\":\"nope:1b\",\"messages\":[]}").statusCode())
                    .isEqualTo(404);
            String after = scrape(cluster);

            double ok = sum(after, "heartgate_proxy_request_duration_seconds_count\\{[^}]*status_class=\"2xx\"[^}]*}");
            assertThat(ok).isEqualTo(60);
            assertThat(sum(after, "heartgate_proxy_request_duration_seconds_count\\{[^}]*node=\"gpu-b\"[^}]*}")).isZero();
            assertThat(sum(after, "heartgate_proxy_time_to_first_byte_seconds_count\\{[^}]*}")).isEqualTo(60);
            assertThat(after).contains("heartgate_proxy_request_duration_seconds_bucket{");
            assertThat(value(after, "heartgate_proxy_requests_total")).isEqualTo(61);
            assertThat(value(after, "heartgate_proxy_connect_failures_total")).isGreaterThanOrEqualTo(3);
            assertThat(value(after, "heartgate_proxy_retries_total")).isGreaterThanOrEqualTo(3);
            assertThat(value(after, "heartgate_passive_ejections_total")).isEqualTo(1);
            assertThat(value(after, "heartgate_nodes_ejected")).isEqualTo(1);
            assertThat(sum(after, "heartgate_proxy_errors_total\\{type=\"model_not_found\"}")).isEqualTo(1);
            assertThat(value(after, "heartgate_proxy_client_cancellations_total")).isZero();
            assertThat(after).contains("vertx_http_server_requests_total"); // the admin port's own
            assertThat(value(after, "heartgate_proxy_in_flight")).isZero();
            // Labels stay bounded: no path label, and the unknown model is not a label value.
            assertThat(after).doesNotContain("path=").doesNotContain("nope:1b");
            assertThat(undocumented(before + after)).as("meters missing from docs/REFERENCE.md's metric table").isEmpty();
        }
    }

    /**
     * Returns the {@code heartgate_*} metric families of {@code scrape} that the reference's
     * metric table does not name: a meter registered at start, or by the load above, must be
     * documented. (Meters made on first use by features this load does not reach are not seen.)
     */
    private static Set<String> undocumented(String scrape) throws IOException {
        String reference = Files.readString(Path.of("../docs/REFERENCE.md"));
        Set<String> missing = new TreeSet<>();
        Matcher m = Pattern.compile("(?m)^# TYPE (heartgate_\\w+) ").matcher(scrape);
        while (m.find()) {
            String family = m.group(1);
            String base = family.replaceAll("_(total|max|created)$", "");
            if (!reference.contains("`" + family + "`") && !reference.contains("`" + base + "`")
                    && !reference.contains("`" + base + "_total`")) {
                missing.add(family);
            }
        }
        return missing;
    }

    private static String scrape(Cluster cluster) throws Exception {
        HttpResponse<String> r = cluster.http.send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + cluster.scheduler.adminPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("content-type")).hasValueSatisfying(ct -> assertThat(ct).startsWith("text/plain"));
        return r.body();
    }

    private static double value(String scrape, String name) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + " ([0-9.eE+-]+|NaN)$").matcher(scrape);
        assertThat(m.find()).as("%s in the scrape", name).isTrue();
        return Double.parseDouble(m.group(1));
    }

    private static double sum(String scrape, String regex) {
        Matcher m = Pattern.compile("(?m)^" + regex + " ([0-9.eE+-]+)$").matcher(scrape);
        double total = 0;
        while (m.find()) {
            total += Double.parseDouble(m.group(1));
        }
        return total;
    }
}

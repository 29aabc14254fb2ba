package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.spi.ILoggingEvent;
import io.heartgate.protocol.cli.KafkaAuthNoise;
import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.LogCapture;
import io.heartgate.testkit.TestKafka;
import io.vertx.core.json.JsonObject;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The admin token: which routes it guards, by default and with {@code --admin-token-all}. */
@ExtendWith(KafkaExtension.class)
class AdminTokenIT {

    static final String TOKEN = "admin-token-0123456789abcdef";

    @TempDir
    Path dir;

    private Cluster cluster;
    private Path tokenFile;

    @BeforeEach
    void setUp(TestKafka kafka) throws Exception {
        cluster = new Cluster(kafka.bootstrapServers());
        tokenFile = Files.writeString(dir.resolve("admin-token"), TOKEN + "\n");
        Cluster.SimNode sim = cluster.sim("gpu-a", c -> c);
        cluster.heartbeat("gpu-a", sim.url(), b -> b.models(List.of("llama3:8b")));
    }

    @AfterEach
    void tearDown() throws Exception {
        cluster.close();
    }

    private HttpResponse<String> admin(String path, String authorization) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + cluster.scheduler.adminPort()
                + path)).timeout(Duration.ofSeconds(10));
        if (authorization != null) {
            b.header("authorization", authorization);
        }
        return cluster.http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static void assertRefused(HttpResponse<String> r) {
        assertThat(r.statusCode()).isEqualTo(401);
        assertThat(new JsonObject(r.body()).getJsonObject("error").getString("type")).isEqualTo("invalid_admin_token");
        assertThat(r.body()).doesNotContain("gpu-a");
        assertThat(r.headers().firstValue("www-authenticate")).hasValue("Bearer realm=\"heartgate-admin\"");
    }

    @Test
    void theFleetNeedsTheTokenAndTheProbesStayOpen() throws Exception {
        cluster.startScheduler(c -> c.security(new SecurityConfig(null, null, tokenFile, false, null, null, null, null, null)));
        cluster.awaitRoutable(1);

        assertRefused(admin("/admin/nodes", null));
        assertRefused(admin("/admin/nodes", "Bearer " + TOKEN + "x"));
        assertRefused(admin("/admin/nodes", "Bearer " + TOKEN.substring(0, 10)));
        assertRefused(admin("/admin/nodes", "Basic " + TOKEN));
        assertRefused(admin("/admin/events", null));
        HttpResponse<String> nodes = admin("/admin/nodes", "Bearer " + TOKEN);
        assertThat(nodes.statusCode()).isEqualTo(200);
        assertThat(nodes.body()).contains("gpu-a");

        assertThat(admin("/healthz", null).statusCode()).isEqualTo(200);
        assertThat(admin("/readyz", null).statusCode()).isEqualTo(200);
        assertThat(admin("/metrics", null).statusCode()).isEqualTo(200);
        HttpResponse<String> page = admin("/", null);
        assertThat(page.statusCode()).as("the page is code, not data").isEqualTo(200);
        assertThat(page.body()).doesNotContain("gpu-a");
    }

    @Test
    void withAllTheProbesAndMetricsNeedItToo() throws Exception {
        cluster.startScheduler(c -> c.security(new SecurityConfig(null, null, tokenFile, true, null, null, null, null, null)));
        cluster.awaitRoutable(1);

        for (String path : List.of("/healthz", "/readyz", "/metrics", "/admin/nodes")) {
            assertRefused(admin(path, null));
            assertThat(admin(path, "Bearer " + TOKEN).statusCode()).as(path).isEqualTo(200);
        }
    }

    @Test
    void offLoopbackWithoutATokenOrAnAllowListTheSchedulerWarnsOnceEach() throws Exception {
        List<String> open;
        try (LogCapture logs = new LogCapture(new KafkaAuthNoise())) {
            cluster.startScheduler(c -> c.bind("0.0.0.0"));
            cluster.awaitRoutable(1);
            open = warnings(logs);
        }
        assertThat(open.stream().filter(w -> w.startsWith("Admin port 0.0.0.0:") && w.contains("has no --admin-token")))
                .hasSize(1);
        assertThat(open.stream().filter(w -> w.startsWith("No --allow-upstream: any record on"))).hasSize(1);
        cluster.scheduler.close();

        List<String> guarded;
        try (LogCapture logs = new LogCapture(new KafkaAuthNoise())) {
            cluster.startScheduler(c -> c.bind("0.0.0.0").proxy(p -> p.allowUpstream("127.0.0.0/8"))
                    .security(new SecurityConfig(null, null, tokenFile, false, null, null, null, null, null)));
            cluster.awaitRoutable(1);
            guarded = warnings(logs);
        }
        assertThat(guarded).noneMatch(w -> w.contains("--admin-token") || w.contains("--allow-upstream"));
    }

    private static List<String> warnings(LogCapture logs) {
        return logs.events().stream().filter(e -> e.getLevel().isGreaterOrEqual(Level.WARN))
                .map(ILoggingEvent::getFormattedMessage).toList();
    }
}

package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Gpu;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.NodeState;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The dashboard in headless Chromium with 100,000 nodes listed, heard through a real broker: the
 * page is usable within 2 s of loading, scrolling to the middle of the table and searching by id
 * show their rows within 2 s each, a node's change shows within 2 s, the updates keep up with the
 * scheduler's (the newest shown is under 2.5 s old, every time looked at), and no task blocks the
 * tab for half a second. Writes {@code target/dashboard-100k.png} for people to look at.
 */
@ExtendWith(KafkaExtension.class)
class DashboardScaleIT {

    private static final int NODES = 100_000;
    private static final List<String> MODELS = List.of("llama3:8b", "qwen2.5:7b", "mistral:7b", "gemma2:9b",
            "phi3:mini", "llama3:70b", "qwen2.5:32b", "deepseek-r1:14b");

    /** Publishes one heartbeat for each of {@link #NODES} nodes, 60 s apart: listed for the whole test. */
    private static void publishFleet(String bootstrap, String topic) {
        HeartbeatCodec codec = new HeartbeatCodec();
        Instant now = Instant.now();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName(),
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName(),
                ProducerConfig.LINGER_MS_CONFIG, 20,
                ProducerConfig.BATCH_SIZE_CONFIG, 512 * 1024))) {
            for (int i = 0; i < NODES; i++) {
                String id = String.format("n-%06d", i);
                // Addresses on loopback nobody listens on: no request is ever routed in this test.
                String url = "http://127." + (i >> 16 & 255) + "." + (i >> 8 & 255) + "." + (i & 255) + ":11434";
                Heartbeat hb = Heartbeat.builder(id, url).instance("i-" + id).seq(1L).sentAt(now).intervalMs(60_000)
                        .backend(i % 3 == 0 ? "vllm" : "ollama")
                        .models(List.of(MODELS.get(i % MODELS.size()), MODELS.get((i / 8) % MODELS.size())))
                        .load(new Load(i % 5, 0, (i % 100) / 100.0, null, null))
                        .gpus(List.of(new Gpu("NVIDIA H100 80GB HBM3", 0.5, 40_000L, 81_559L)))
                        .capacity(8).build();
                producer.send(new ProducerRecord<>(topic, id.getBytes(StandardCharsets.UTF_8), codec.encode(hb)));
            }
            producer.flush();
        }
    }

    @Test
    void aHundredThousandNodesStayUsable(TestKafka kafka, @TempDir Path profile) throws Exception {
        DashboardBrowserIT.assumeChromium();
        try (Cluster cluster = new Cluster(kafka.bootstrapServers())) {
            publishFleet(cluster.bootstrap, cluster.topic);
            cluster.heartbeat("live-node", "http://127.0.0.1:9", b -> b.models(List.of("llama3:8b")));
            cluster.startScheduler(c -> { });
            Awaitility.await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200))
                    .until(() -> cluster.scheduler.table().snapshot().nodes().size() == NODES + 1);

            ChromeDriver browser = DashboardBrowserIT.browser(profile);
            try {
                long asked = System.nanoTime();
                browser.get("http://127.0.0.1:" + cluster.scheduler.adminPort() + "/");
                assertThat((Boolean) browser.executeScript(
                        "return PerformanceObserver.supportedEntryTypes.includes('longtask');")).isTrue();
                browser.executeScript("window.longestTask = 0; new PerformanceObserver(l => l.getEntries().forEach("
                        + "e => window.longestTask = Math.max(window.longestTask, e.duration)))"
                        + ".observe({type: 'longtask', buffered: true});");
                WebDriverWait twoSeconds = new WebDriverWait(browser, Duration.ofSeconds(2));
                twoSeconds.until(ExpectedConditions.textToBe(By.id("counts"), "100,001 listed, 100,001 routable"));
                twoSeconds.until(ExpectedConditions.textToBe(By.cssSelector(".row[data-node='n-000000'] .state"), "UP"));
                long usableMs = (System.nanoTime() - asked) / 1_000_000;
                System.out.println("[dashboard at " + NODES + " nodes] usable " + usableMs + " ms after it was asked for");
                assertThat(browser.findElement(By.id("by-state")).getText()).contains("UP 100,001");
                Files.write(Path.of("target", "dashboard-100k.png"),
                        ((TakesScreenshot) browser).getScreenshotAs(OutputType.BYTES));

                // The middle of the table: its rows are read as they come into view.
                browser.executeScript("const w = document.getElementById('table-wrap');"
                        + "w.scrollTop = w.scrollHeight / 2;");
                twoSeconds.until(ExpectedConditions.presenceOfElementLocated(By.cssSelector(".row[data-node='n-050000']")));
                assertThat(browser.findElements(By.cssSelector(".row")).size()).isLessThan(200);

                // A search by id prefix.
                browser.findElement(By.id("search")).sendKeys("n-09999");
                twoSeconds.until(ExpectedConditions.textToBe(By.id("matching"), "10 matching"));
                twoSeconds.until(ExpectedConditions.textToBe(By.cssSelector(".row[data-node='n-099995'] .state"), "UP"));

                // A change on one node among them all.
                browser.findElement(By.id("search")).clear();
                browser.findElement(By.id("search")).sendKeys("live");
                twoSeconds.until(ExpectedConditions.textToBe(By.cssSelector(".row[data-node='live-node'] .state"), "UP"));
                cluster.heartbeat("live-node", "http://127.0.0.1:9", b -> b.models(List.of("llama3:8b"))
                        .state(NodeState.DOWN));
                twoSeconds.until(ExpectedConditions.textToBe(By.cssSelector(".row[data-node='live-node'] .state"), "DOWN"));

                // The updates keep up: looked at every half second for 5 s, the newest is always recent.
                Awaitility.await().during(Duration.ofSeconds(5)).atMost(Duration.ofSeconds(7))
                        .pollInterval(Duration.ofMillis(500)).until(() -> (Long) browser.executeScript(
                                "return Date.now() - Number(document.body.dataset.eventTime);") < 2_500);
                Number longest = (Number) browser.executeScript("return window.longestTask;");
                System.out.println("[dashboard at " + NODES + " nodes] longest task " + longest + " ms");
                assertThat(longest.doubleValue()).as("longest task blocking the tab, ms").isLessThan(500);
            } finally {
                browser.quit();
            }
        }
    }
}

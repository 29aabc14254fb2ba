package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.LoadedModel;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.openqa.selenium.By;
import org.openqa.selenium.OutputType;
import org.openqa.selenium.TakesScreenshot;
import org.openqa.selenium.chrome.ChromeDriver;
import org.openqa.selenium.chrome.ChromeDriverService;
import org.openqa.selenium.chrome.ChromeOptions;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * Drives the real dashboard in headless Chromium (Debian's chromium and chromium-driver, which
 * {@code .ci/run} installs) while heartbeats arrive: a node appears, goes DOWN and leaves, each
 * shown within 2 s; and with an admin token, nothing shown until it is given. Writes {@code target/dashboard.png} for people to look at.
 */
@ExtendWith(KafkaExtension.class)
class DashboardBrowserIT {

    private static final Path CHROMIUM = Path.of("/usr/bin/chromium");
    private static final Path CHROMEDRIVER = Path.of("/usr/bin/chromedriver");

    /** Skips the calling test where Chromium is not installed. */
    static void assumeChromium() {
        Assumptions.assumeTrue(Files.isExecutable(CHROMIUM) && Files.isExecutable(CHROMEDRIVER),
                "Chromium is not installed (apt-get install chromium chromium-driver): skipping the browser test");
    }

    /** Starts headless Chromium with its profile in {@code profile}. */
    static ChromeDriver browser(Path profile) {
        ChromeOptions options = new ChromeOptions();
        options.setBinary(CHROMIUM.toFile());
        options.addArguments("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--window-size=1400,700", "--user-data-dir=" + profile);
        ChromeDriverService service = new ChromeDriverService.Builder()
                .usingDriverExecutable(CHROMEDRIVER.toFile()).usingAnyFreePort().build();
        return new ChromeDriver(service, options);
    }

    @Test
    void withAnAdminTokenTheDashboardShowsNothingUntilItIsGiven(TestKafka kafka, @TempDir Path profile)
            throws Exception {
        assumeChromium();
        Path tokenFile = Files.writeString(profile.resolveSibling(profile.getFileName() + "-token"), AdminTokenIT.TOKEN);
        try (Cluster cluster = new Cluster(kafka.bootstrapServers())) {
            Cluster.SimNode a = cluster.sim("gpu-a", c -> c);
            cluster.heartbeat("gpu-a", a.url(), b -> b.models(List.of("llama3:8b")));
            cluster.startScheduler(c -> c.security(new SecurityConfig(null, null,
                    tokenFile, false, null, null, null, null, null)));
            cluster.awaitRoutable(1);
            ChromeDriver browser = browser(profile);
            try {
                browser.get("http://127.0.0.1:" + cluster.scheduler.adminPort() + "/");
                WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(5));
                wait.until(ExpectedConditions.visibilityOfElementLocated(By.id("login")));
                assertThat(browser.findElements(By.cssSelector(".row[data-node]"))).isEmpty();
                assertThat(browser.findElement(By.id("fleet")).isDisplayed()).isFalse();
                assertThat(browser.getPageSource()).doesNotContain("gpu-a");

                browser.findElement(By.id("token")).sendKeys("not-the-token");
                browser.findElement(By.cssSelector("#login button")).click();
                wait.until(ExpectedConditions.textToBe(By.id("login-error"), "That token was refused."));
                assertThat(browser.findElements(By.cssSelector(".row[data-node]"))).isEmpty();

                browser.findElement(By.id("token")).sendKeys(AdminTokenIT.TOKEN);
                browser.findElement(By.cssSelector("#login button")).click();
                wait.until(ExpectedConditions.textToBe(By.cssSelector(".row[data-node='gpu-a'] .state"), "UP"));

                // Kept for the tab: a reload goes straight to the fleet.
                browser.navigate().refresh();
                wait.until(ExpectedConditions.textToBe(By.cssSelector(".row[data-node='gpu-a'] .state"), "UP"));
                assertThat(browser.findElement(By.id("login")).isDisplayed()).isFalse();
            } finally {
                browser.quit();
                Files.deleteIfExists(tokenFile);
            }
        }
    }

    @Test
    void theDashboardFollowsNodesLive(TestKafka kafka, @TempDir Path profile) throws Exception {
        assumeChromium();
        try (Cluster cluster = new Cluster(kafka.bootstrapServers())) {
            Cluster.SimNode a = cluster.sim("gpu-a", c -> c);
            cluster.heartbeat("gpu-a", a.url(), b -> b.weight(3).models(List.of("llama3:8b", "qwen2.5:7b"))
                    .loaded(List.of(new LoadedModel("llama3:8b", null, null, null, null))));
            cluster.startScheduler(c -> { });
            cluster.awaitRoutable(1);
            for (int i = 0; i < 5; i++) {
                cluster.post("/api/generate", "{\"model\":\"llama3:8b\",\"prompt\":\"hi\",\"stream\":false}");
            }

            ChromeDriver browser = browser(profile);
            try {
                browser.get("http://127.0.0.1:" + cluster.scheduler.adminPort() + "/");
                WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(5));
                wait.until(ExpectedConditions.textToBe(By.cssSelector(".row[data-node='gpu-a'] .state"), "UP"));
                // Read through waits, which find the element again: the table is redrawn every second,
                // so an element found once may be gone by the time its text is read.
                wait.until(ExpectedConditions.textToBe(By.cssSelector(".row[data-node='gpu-a'] .loaded"), "llama3:8b"));

                // A node joins: on screen within 2 s.
                Cluster.SimNode b = cluster.sim("gpu-b", c -> c);
                cluster.heartbeat("gpu-b", b.url(), h -> h.models(List.of("llama3:8b")));
                new WebDriverWait(browser, Duration.ofSeconds(2)).until(
                        ExpectedConditions.textToBe(By.cssSelector(".row[data-node='gpu-b'] .state"), "UP"));

                // It goes DOWN: within 2 s.
                cluster.heartbeat("gpu-b", b.url(), h -> h.models(List.of("llama3:8b")).state(NodeState.DOWN));
                new WebDriverWait(browser, Duration.ofSeconds(2)).until(
                        ExpectedConditions.textToBe(By.cssSelector(".row[data-node='gpu-b'] .state"), "DOWN"));
                wait.until(ExpectedConditions.textMatches(By.cssSelector(".row[data-node='gpu-b'] .routable"),
                        Pattern.compile("^no.*")));

                Files.write(Path.of("target", "dashboard.png"), ((TakesScreenshot) browser).getScreenshotAs(OutputType.BYTES));

                // It leaves (tombstone): gone within 2 s.
                cluster.stopHeartbeats("gpu-b");
                cluster.tombstone("gpu-b");
                new WebDriverWait(browser, Duration.ofSeconds(2)).until(
                        ExpectedConditions.numberOfElementsToBe(By.cssSelector(".row[data-node='gpu-b']"), 0));
                wait.until(ExpectedConditions.textToBe(By.id("strategy"), "weighted"));
                wait.until(ExpectedConditions.textToBe(By.cssSelector(".row[data-node='gpu-a'] .models"),
                        "llama3:8b, qwen2.5:7b"));
            } finally {
                browser.quit();
            }
        }
    }

    @Test
    void underAffinityTheDashboardShowsTheHitRatio(TestKafka kafka, @TempDir Path profile) throws Exception {
        assumeChromium();
        try (Cluster cluster = new Cluster(kafka.bootstrapServers())) {
            for (String id : List.of("gpu-a", "gpu-b")) {
                Cluster.SimNode n = cluster.sim(id, c -> c);
                cluster.heartbeat(id, n.url(), b -> b.models(List.of("llama3:8b")));
            }
            cluster.startScheduler(c -> c.strategy(Strategy.AFFINITY));
            cluster.awaitRoutable(2);
            for (int i = 0; i < 4; i++) { // one conversation: its prompt's beginning is its key
                cluster.post("/api/chat", "{\"model\":\"llama3:8b\",\"stream\":false,\"messages\":"
                        + "[{\"role\":\"user\",\"content\":\"hello\"}]}");
            }
            cluster.post("/api/generate", "{\"model\":\"llama3:8b\",\"stream\":false}"); // no key
            ChromeDriver browser = browser(profile);
            try {
                browser.get("http://127.0.0.1:" + cluster.scheduler.adminPort() + "/");
                WebDriverWait wait = new WebDriverWait(browser, Duration.ofSeconds(5));
                wait.until(ExpectedConditions.textToBe(By.id("hit-ratio"), "100% hits"));
                wait.until(ExpectedConditions.textToBe(By.id("affinity-detail"), "(4 hit, 0 spill, 1 no key)"));
                wait.until(ExpectedConditions.textToBe(By.id("strategy"), "affinity"));
            } finally {
                browser.quit();
            }
        }
    }
}

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The chaos suite (run by bench/chaos.sh): three simulated nodes with agents at a 500 ms interval,
 * two scheduler replicas (A hosts the embedded broker, B reads it) behind nginx, and a steady load
 * of 8 clients sending small chats back to back and 2 streaming, while the faults of a production
 * fleet happen one phase after another. Prints, per phase, the requests sent, failed, over 5 s and
 * the worst latency, streams apart, and what the phase checks (nodes lost, time to ready).
 *
 * <p>Single-file Java (JDK only) so that it runs with nothing but the JDK and the packaged jars.
 */
public final class Chaos {

    static final Path ROOT = Path.of(".").toAbsolutePath().normalize();
    static final String SIM_JAR = "inference-sim/target/inference-sim.jar";
    static final String AGENT_JAR = "heartbeat-agent/target/heartbeat-agent.jar";
    static final String SCHEDULER_JAR = "scheduler/target/scheduler.jar";
    static final int LB_PORT = 19190;
    static final int BROKER_PORT = 19192;
    static final String CHAT = "{\"model\":\"llama3:8b\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    static final String STREAM = "{\"model\":\"llama3:8b\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

    record Result(long startNanos, long endNanos, boolean stream, boolean ok, String why) {
        long ms() {
            return TimeUnit.NANOSECONDS.toMillis(endNanos - startNanos);
        }
    }

    final Path work;
    final List<Process> all = new ArrayList<>();
    final Map<String, Process> procs = new LinkedHashMap<>();
    final ConcurrentLinkedQueue<Result> results = new ConcurrentLinkedQueue<>();
    final AtomicBoolean loading = new AtomicBoolean(true);
    final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();
    final StringBuilder report = new StringBuilder();

    Chaos(Path work) {
        this.work = work;
    }

    public static void main(String[] args) throws Exception {
        Path work = Files.createTempDirectory("heartgate-chaos");
        Chaos c = new Chaos(work);
        Runtime.getRuntime().addShutdownHook(new Thread(c::stopAll));
        int failures;
        try {
            failures = c.run();
        } finally {
            c.stopAll();
        }
        System.exit(failures == 0 ? 0 : 1);
    }

    // ---- processes

    Process java(String name, String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).directory(ROOT.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(work.resolve(name + ".log").toFile())).start();
        all.add(p);
        procs.put(name, p);
        return p;
    }

    void startSim(int i) throws IOException {
        java("sim-" + i, "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", SIM_JAR,
                "--name", "gpu-" + i, "--port", String.valueOf(19100 + i), "--models", "llama3:8b", "--tokens", "8",
                "--token-delay", "5ms", "--first-token-delay", "20ms", "--max-concurrency", "64");
    }

    void startAgent(int i) throws IOException {
        java("agent-" + i, "-Xmx96m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", AGENT_JAR,
                "--kafka", "127.0.0.1:" + BROKER_PORT, "--node-id", "gpu-" + i, "--url", "http://127.0.0.1:" + (19100 + i),
                "--backend", "ollama", "--interval", "500ms", "--probe-timeout", "300ms",
                "--nvidia-smi", "/nonexistent/nvidia-smi");
    }

    /** Replica A hosts the embedded broker (its log kept in work/kafka-data); B reads it. */
    void startScheduler(String replica) throws IOException {
        int base = replica.equals("A") ? 19180 : 19280;
        List<String> args = new ArrayList<>(List.of("-Xmx384m", "-jar", SCHEDULER_JAR, "--port", String.valueOf(base),
                "--admin-port", String.valueOf(base + 1), "--strategy", "round-robin"));
        if (replica.equals("A")) {
            args.addAll(List.of("--embedded-kafka-port", String.valueOf(BROKER_PORT), "--data-dir",
                    work.resolve("kafka-data").toString()));
        } else {
            args.addAll(List.of("--kafka", "127.0.0.1:" + BROKER_PORT));
        }
        java("scheduler-" + replica, args.toArray(String[]::new));
    }

    static void signal(String sig, long pid) throws Exception {
        new ProcessBuilder("kill", "-" + sig, String.valueOf(pid)).start().waitFor(5, TimeUnit.SECONDS);
    }

    void signal(String sig, String name) throws Exception {
        signal(sig, procs.get(name).pid());
    }

    void kill(String name) throws Exception {
        Process p = procs.get(name);
        p.destroyForcibly();
        p.waitFor(10, TimeUnit.SECONDS);
    }

    void term(String name) throws Exception {
        Process p = procs.get(name);
        signal("TERM", p.pid());
        if (!p.waitFor(40, TimeUnit.SECONDS)) {
            p.destroyForcibly();
        }
    }

    long brokerPid() {
        return procs.get("scheduler-A").toHandle().children().findFirst()
                .orElseThrow(() -> new IllegalStateException("replica A has no broker child")).pid();
    }

    void startNginx() throws Exception {
        String conf = """
                worker_processes 1;
                pid %1$s/nginx.pid;
                error_log %1$s/nginx-error.log warn;
                events { worker_connections 1024; }
                http {
                  access_log off;
                  upstream schedulers { server 127.0.0.1:19180 max_fails=0; server 127.0.0.1:19280 max_fails=0; keepalive 64; }
                  server {
                    listen 127.0.0.1:%2$d;
                    location / {
                      proxy_pass http://schedulers; proxy_http_version 1.1; proxy_set_header Connection "";
                      proxy_buffering off; proxy_connect_timeout 1s; proxy_read_timeout 300s;
                      proxy_next_upstream error timeout non_idempotent;
                    }
                  }
                }
                """.formatted(work, LB_PORT);
        Files.writeString(work.resolve("nginx.conf"), conf);
        Process p = new ProcessBuilder("nginx", "-c", work.resolve("nginx.conf").toString()).redirectErrorStream(true)
                .redirectOutput(work.resolve("nginx.log").toFile()).start();
        if (p.waitFor() != 0) {
            throw new IllegalStateException("nginx did not start: " + Files.readString(work.resolve("nginx.log")));
        }
    }

    void stopAll() {
        loading.set(false);
        try {
            Path pid = work.resolve("nginx.pid");
            if (Files.exists(pid)) {
                signal("QUIT", Long.parseLong(Files.readString(pid).trim()));
            }
        } catch (Exception ignored) {
            // best effort
        }
        for (Process p : all) {
            p.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
    }

    // ---- waiting

    static void waitUntil(String what, long maxMs, java.util.function.BooleanSupplier done) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(maxMs);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("timed out waiting for " + what);
            }
            Thread.sleep(20);
        }
    }

    boolean logHas(String name, String text) {
        try {
            return Files.readString(work.resolve(name + ".log")).contains(text);
        } catch (IOException e) {
            return false;
        }
    }

    /** Returns replica {@code r}'s {@code /admin/nodes} answer, or null when it does not answer. */
    String adminNodes(String r) {
        int port = (r.equals("A") ? 19180 : 19280) + 1;
        try {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/admin/nodes"))
                    .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString()).body();
        } catch (Exception e) {
            return null;
        }
    }

    static int occurrences(String body, String text) {
        if (body == null) {
            return -1;
        }
        int n = 0;
        for (int i = body.indexOf(text); i >= 0; i = body.indexOf(text, i + 1)) {
            n++;
        }
        return n;
    }

    /** Returns how many nodes replica {@code r} routes to, or -1 when it does not answer. */
    int routable(String r) {
        return occurrences(adminNodes(r), "\"routable\":true");
    }

    /** Returns how many nodes replica {@code r} lists (routable or not), or -1 when it does not answer. */
    int listed(String r) {
        return occurrences(adminNodes(r), "\"nodeId\":");
    }

    boolean ready(String r) {
        int port = (r.equals("A") ? 19180 : 19280) + 1;
        try {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/readyz"))
                    .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (Exception e) {
            return false;
        }
    }

    /**
     * Starts replica {@code r} (a fresh log) and waits until it is ready listing all {@code nodes}
     * live nodes; returns the ms from its "proxy listening" line to that.
     */
    long restartScheduler(String r, int nodes) throws Exception {
        Path log = work.resolve("scheduler-" + r + ".log");
        for (int i = 1; Files.exists(log); i++) { // keep the earlier run's log: scheduler-A.1.log, ...
            Path earlier = work.resolve("scheduler-" + r + "." + i + ".log");
            if (!Files.exists(earlier)) {
                Files.move(log, earlier);
            }
        }
        startScheduler(r);
        waitUntil("replica " + r + "'s proxy line", 60_000, () -> logHas("scheduler-" + r, "proxy listening on"));
        long listening = System.nanoTime();
        waitUntil("replica " + r + " ready with " + nodes + " nodes", 60_000, () -> ready(r) && listed(r) == nodes);
        return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - listening);
    }

    // ---- load

    /** Each client's request in flight: its start (nanoTime), or Long.MAX_VALUE between requests. */
    final java.util.concurrent.atomic.AtomicLongArray inFlightSince = new java.util.concurrent.atomic.AtomicLongArray(10);

    void startLoad(ExecutorService pool) {
        for (int i = 0; i < 10; i++) {
            boolean stream = i >= 8;
            int client = i;
            inFlightSince.set(client, Long.MAX_VALUE);
            pool.submit(() -> {
                while (loading.get()) {
                    inFlightSince.set(client, System.nanoTime());
                    results.add(stream ? streamOnce() : chatOnce());
                    inFlightSince.set(client, Long.MAX_VALUE);
                }
            });
        }
    }

    /** Waits until every request started before {@code nanos} has ended (they are judged with their phase). */
    void awaitStartedBefore(long nanos) throws InterruptedException {
        waitUntil("the requests of the phase to end", 70_000, () -> {
            for (int i = 0; i < inFlightSince.length(); i++) {
                if (inFlightSince.get(i) < nanos) {
                    return false;
                }
            }
            return true;
        });
    }

    HttpRequest request(String body) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + LB_PORT + "/v1/chat/completions"))
                .timeout(Duration.ofSeconds(60)).header("content-type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    Result chatOnce() {
        long start = System.nanoTime();
        try {
            HttpResponse<String> r = http.send(request(CHAT), HttpResponse.BodyHandlers.ofString());
            boolean ok = r.statusCode() == 200 && r.body().contains("\"choices\"");
            return new Result(start, System.nanoTime(), false, ok, ok ? null : r.statusCode() + " " + r.body());
        } catch (Exception e) {
            return new Result(start, System.nanoTime(), false, false, e.toString());
        }
    }

    Result streamOnce() {
        long start = System.nanoTime();
        try {
            HttpResponse<InputStream> r = http.send(request(STREAM), HttpResponse.BodyHandlers.ofInputStream());
            boolean done = false;
            try (BufferedReader in = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    done |= line.equals("data: [DONE]");
                }
            }
            boolean ok = r.statusCode() == 200 && done;
            return new Result(start, System.nanoTime(), true, ok, ok ? null : r.statusCode() + " stream without [DONE]");
        } catch (Exception e) {
            return new Result(start, System.nanoTime(), true, false, e.toString());
        }
    }

    // ---- phases

    interface Step {
        String run() throws Exception;
    }

    int failedPhases;

    /** Runs one phase: its step under the running load; prints its line; counts a phase that broke the suite's rule. */
    void phase(String name, boolean noneOver5s, Step step) throws Exception {
        long from = System.nanoTime();
        System.err.println("  (" + java.time.LocalTime.now().withNano(0) + ") " + name);
        String note = step.run();
        long to = System.nanoTime();
        awaitStartedBefore(to);
        List<Result> mine = results.stream().filter(r -> r.startNanos() >= from && r.startNanos() < to).toList();
        List<Result> chats = mine.stream().filter(r -> !r.stream()).toList();
        List<Result> streams = mine.stream().filter(Result::stream).toList();
        long failed = chats.stream().filter(r -> !r.ok()).count();
        long over5 = chats.stream().filter(r -> r.ms() > 5000).count();
        long worst = chats.stream().mapToLong(Result::ms).max().orElse(0);
        long streamsFailed = streams.stream().filter(r -> !r.ok()).count();
        boolean broke = failed > 0 || (noneOver5s && over5 > 0);
        if (broke) {
            failedPhases++;
        }
        String line = String.format("| %-22s | %5.1f | %6d | %6d | %7d | %8d | %7d | %8d | %s%s |", name,
                (to - from) / 1e9, chats.size(), failed, over5, worst, streams.size(), streamsFailed, note,
                broke ? " FAILED" : "");
        System.out.println(line);
        report.append(line).append('\n');
        chats.stream().filter(r -> !r.ok()).limit(5).forEach(r -> System.out.println("    failed: " + r.why()));
    }

    /**
     * Holds the load for {@code ms}, noting the fewest nodes each replica routed and listed
     * meanwhile: {routable A, routable B, listed A, listed B} (a replica that does not answer is skipped).
     */
    int[] hold(long ms) throws InterruptedException {
        int[] least = {Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE};
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (System.nanoTime() < end) {
            int[] now = {routable("A"), routable("B"), listed("A"), listed("B")};
            for (int i = 0; i < 4; i++) {
                if (now[i] >= 0) {
                    least[i] = Math.min(least[i], now[i]);
                }
            }
            Thread.sleep(100);
        }
        return least;
    }

    void awaitRoutable(int n) throws InterruptedException {
        waitUntil(n + " routable nodes on both replicas", 90_000, () -> routable("A") == n && routable("B") == n);
    }

    int run() throws Exception {
        for (int i = 1; i <= 3; i++) {
            startSim(i);
        }
        startScheduler("A");
        waitUntil("the embedded broker", 120_000, () -> logHas("scheduler-A", "proxy listening on"));
        for (int i = 1; i <= 3; i++) {
            startAgent(i);
        }
        startScheduler("B");
        startNginx();
        awaitRoutable(3);
        System.out.println("chaos: 3 sims with agents at 500 ms, replicas A (embedded broker) and B behind nginx; logs in " + work);
        ExecutorService pool = Executors.newFixedThreadPool(10);
        startLoad(pool);
        String head = "| phase                  |     s |  chats | failed | over 5s | worst ms | streams | cut/fail | checks |\n"
                + "|------------------------|-------|--------|--------|---------|----------|---------|----------|--------|";
        System.out.println(head);
        report.append(head).append('\n');

        phase("steady", true, () -> {
            int[] n = hold(8000);
            return "fewest routable A/B " + n[0] + "/" + n[1];
        });
        phase("server killed", false, () -> {
            kill("sim-1"); // its agent keeps running and reports it DOWN
            int[] n = hold(8000);
            return "fewest routable A/B " + n[0] + "/" + n[1];
        });
        phase("server restarted", false, () -> {
            startSim(1);
            long t = System.nanoTime();
            awaitRoutable(3);
            long back = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t);
            hold(5000);
            return "routable again after " + back + " ms";
        });
        phase("node silent", false, () -> {
            kill("sim-2");
            kill("agent-2"); // no tombstone: the node must expire
            long t = System.nanoTime();
            waitUntil("gpu-2 expired", 20_000, () -> listed("A") == 2 && listed("B") == 2);
            long gone = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t);
            hold(5000);
            startSim(2);
            startAgent(2);
            awaitRoutable(3);
            return "expired after " + gone + " ms, then back";
        });
        phase("server hung 12 s", true, () -> {
            signal("STOP", "sim-3"); // the kernel still accepts its connections; nothing answers
            hold(12_000);
            signal("CONT", "sim-3");
            awaitRoutable(3);
            hold(2000);
            return "SIGSTOP, agent running";
        });
        phase("Kafka stopped 12 s", false, () -> {
            int before = Math.min(listed("A"), listed("B"));
            long broker = brokerPid();
            signal("STOP", broker);
            int[] n = hold(12_000);
            signal("CONT", broker);
            hold(3000);
            int lost = before - Math.min(n[2], n[3]);
            return "nodes lost " + Math.max(0, lost) + " (listed before " + before + ", fewest A/B " + n[2] + "/" + n[3] + ")";
        });
        phase("scheduler restarted", false, () -> {
            int nodes = 3;
            term("scheduler-B");
            long readyMs = restartScheduler("B", nodes);
            hold(3000);
            return "B ready with " + nodes + " nodes " + readyMs + " ms after its proxy line";
        });
        phase("replica killed", false, () -> {
            int nodes = 3;
            kill("scheduler-B"); // SIGKILL: nginx moves its requests to A
            hold(6000);
            long readyMs = restartScheduler("B", nodes);
            hold(2000);
            return "B back, ready " + readyMs + " ms after its proxy line";
        });
        phase("broker restarted", false, () -> {
            int nodes = 3;
            term("scheduler-A"); // stops its embedded broker with it; B and the agents ride it out
            int[] n = hold(3000);
            long readyMs = restartScheduler("A", nodes);
            hold(3000);
            return "A and its broker back, ready " + readyMs + " ms after its proxy line; fewest on B " + n[1];
        });

        phase("node flapping", false, () -> {
            // Its health check fails and recovers every 1.5 s: more than 4 changes a minute.
            for (int i = 0; i < 8; i++) {
                faults(1, i % 2 == 0 ? "{\"failHealth\":true}" : "{\"failHealth\":false}");
                hold(1500);
            }
            faults(1, "{\"failHealth\":false}");
            hold(2000);
            String a = held("A", "gpu-1");
            return "gpu-1 on A: " + a;
        });
        loading.set(false);
        pool.shutdown();
        pool.awaitTermination(70, TimeUnit.SECONDS);
        long all = results.stream().filter(r -> !r.stream()).count();
        long allFailed = results.stream().filter(r -> !r.stream() && !r.ok()).count();
        System.out.printf("chaos: %d chats, %d failed; %d phases broke the rule (zero failed chats; none over 5 s "
                + "where marked)%n", all, allFailed, failedPhases);
        return failedPhases + (allFailed > 0 ? 1 : 0);
    }

    void faults(int sim, String json) throws Exception {
        http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + (19100 + sim) + "/sim/faults"))
                .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json)).build(),
                HttpResponse.BodyHandlers.discarding());
    }

    /** Returns replica {@code r}'s notRoutableReason for {@code node}, or "routable". */
    String held(String r, String node) {
        String body = adminNodes(r);
        int at = body == null ? -1 : body.indexOf("\"nodeId\":\"" + node + "\"");
        if (at < 0) {
            return "?";
        }
        int reason = body.indexOf("\"notRoutableReason\":\"", at);
        int next = body.indexOf("\"nodeId\":\"", at + 1);
        if (reason < 0 || (next >= 0 && reason > next)) {
            return "routable";
        }
        int s = reason + "\"notRoutableReason\":\"".length();
        return body.substring(s, body.indexOf('"', s));
    }
}

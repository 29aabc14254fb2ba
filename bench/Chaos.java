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
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

/**
 * The chaos suite (run by bench/chaos.sh): three simulated nodes with agents at a 500 ms interval,
 * two scheduler replicas (A hosts the embedded broker, B reads it) behind nginx, and a steady load
 * of 8 clients sending small chats back to back and 2 streaming, while the faults of a production
 * fleet happen one phase after another. Prints, per phase, the requests sent, failed, over 5 s and
 * the worst latency, streams apart, and what the phase checks (nodes lost, time to ready).
 *
 * <p>{@code --phase kill-mid-stream} runs instead a phase that needs its own fleet (long answers,
 * agents probing as vLLM, no background load): a node's server killed under 20 or more streams, once
 * with stream migration on and once with {@code --migrate-streams 0} ({@link #killMidStreamPhase}).
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
    /** The replicas' {@code --migrate-streams}, or null for their default. */
    Integer migrateStreams;

    Chaos(Path work) {
        this.work = work;
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("--phase") && args[1].equals("kill-mid-stream")) {
            System.exit(killMidStreamPhase());
        }
        if (args.length > 0) {
            System.err.println("usage: bench/chaos.sh [--phase kill-mid-stream]");
            System.exit(2);
        }
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
        startSim(i, "llama3:8b", 8, "5ms");
    }

    /** Starts sim {@code i} (node gpu-i, port 19100+i) serving {@code models}, answers of {@code tokens} tokens. */
    void startSim(int i, String models, int tokens, String tokenDelay) throws IOException {
        java("sim-" + i, "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", SIM_JAR,
                "--name", "gpu-" + i, "--port", String.valueOf(19100 + i), "--models", models, "--tokens",
                String.valueOf(tokens), "--token-delay", tokenDelay, "--first-token-delay", "20ms", "--max-concurrency", "64");
    }

    void startAgent(int i) throws IOException {
        startAgent(i, "ollama", "300ms");
    }

    /** Starts the agent of sim {@code i}, probing it as {@code backend} every 500 ms. */
    void startAgent(int i, String backend, String probeTimeout) throws IOException {
        java("agent-" + i, "-Xmx96m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", AGENT_JAR,
                "--kafka", "127.0.0.1:" + BROKER_PORT, "--node-id", "gpu-" + i, "--url", "http://127.0.0.1:" + (19100 + i),
                "--backend", backend, "--interval", "500ms", "--probe-timeout", probeTimeout,
                "--nvidia-smi", "/nonexistent/nvidia-smi");
    }

    /** Replica A hosts the embedded broker (its log kept in work/kafka-data); B reads it. */
    void startScheduler(String replica) throws IOException {
        int base = replica.equals("A") ? 19180 : 19280;
        List<String> args = new ArrayList<>(List.of("-Xmx384m", "-jar", SCHEDULER_JAR, "--port", String.valueOf(base),
                "--admin-port", String.valueOf(base + 1), "--strategy", "round-robin"));
        if (migrateStreams != null) {
            args.addAll(List.of("--migrate-streams", String.valueOf(migrateStreams)));
        }
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
        List<ProcessHandle> stopping = new ArrayList<>();
        for (Process p : all) {
            p.toHandle().descendants().forEach(stopping::add);
            stopping.add(p.toHandle());
        }
        stopping.forEach(ProcessHandle::destroyForcibly);
        // Bounded waits, so that a fleet started next finds its ports free.
        for (ProcessHandle h : stopping) {
            try {
                h.onExit().get(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (Exception ignored) {
                // best effort
            }
        }
        try {
            waitUntil("nginx to exit", 10_000, () -> !Files.exists(work.resolve("nginx.pid")));
        } catch (Exception ignored) {
            // best effort
        }
    }

    // ---- waiting

    /** The time of day for progress lines, seconds always shown. */
    static String clock() {
        return java.time.LocalTime.now().format(java.time.format.DateTimeFormatter.ofPattern("HH:mm:ss"));
    }

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
        System.err.println("  (" + clock() + ") " + name);
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

    // ---- kill mid-stream (bench/chaos.sh --phase kill-mid-stream)

    /** The phase's model: served by gpu-1 and gpu-2 only; gpu-3 serves llama3:8b and stays idle. */
    static final String LONG_MODEL = "llama3:70b";
    /** Streams started at once; split between two nodes, the busier one holds at least half: 20. */
    static final int MID_STREAMS = 40;
    /** Tokens per answer (the sims' --tokens and the request's max_tokens); at 50 ms each about 6 s. */
    static final int MID_TOKENS = 120;
    /** Text events every stream has read before the kill, so that the cut falls well inside each answer. */
    static final int MID_KILL_AFTER = 30;
    /** The simulator's words after its {@code [NAME]} marker, in order (inference-sim's TextSource). */
    static final List<String> SIM_WORDS = List.of(" the", " GPU", " streams", " tokens", " quickly", " while",
            " the", " scheduler", " routes", " each", " request", " to", " a", " live", " node", ".");
    static final String LONG_STREAM = "{\"model\":\"" + LONG_MODEL + "\",\"stream\":true,\"max_tokens\":" + MID_TOKENS
            + ",\"messages\":[{\"role\":\"user\",\"content\":\"tell me a long story\"}]}";

    /** One stream of the phase as its client read it. Fields other than the volatile ones are read once it ended. */
    static final class Read {
        /** The node it started on, from the {@code [NAME]} marker its text begins with. */
        volatile String node;
        /** Events that carried text so far. */
        final AtomicInteger texts = new AtomicInteger();
        volatile boolean ended;
        int status;
        boolean done;
        boolean afterDone;
        int roles;
        final Set<String> ids = new HashSet<>();
        final StringBuilder text = new StringBuilder();
        /** The longest time between two text events, the pause a move costs its client. */
        long worstGapNanos;
        String error;

        /** Says why the stream is not complete and well formed, or null when it is. */
        String fault() {
            if (!done) {
                return "cut after " + texts.get() + " text events: " + (error != null ? error : "status " + status + ", no [DONE]");
            }
            if (afterDone || roles != 1 || ids.size() != 1) {
                return "malformed: " + roles + " role chunks, ids " + ids + (afterDone ? ", events after [DONE]" : "");
            }
            if (node == null) {
                return "malformed: no text";
            }
            String want = expectedText(node);
            if (!text.toString().equals(want)) {
                int at = 0;
                while (at < Math.min(want.length(), text.length()) && want.charAt(at) == text.charAt(at)) {
                    at++;
                }
                return "malformed text from char " + at + ": got '" + excerpt(text.toString(), at) + "', want '"
                        + excerpt(want, at) + "'";
            }
            return null;
        }
    }

    /** What a sim named {@code node} answers in {@link #MID_TOKENS} tokens: its marker, then its words in order. */
    static String expectedText(String node) {
        StringBuilder sb = new StringBuilder("[" + node + "]");
        for (int i = 0; i < MID_TOKENS - 1; i++) {
            sb.append(SIM_WORDS.get(i % SIM_WORDS.size()));
        }
        return sb.toString();
    }

    static String excerpt(String s, int at) {
        return s.substring(Math.max(0, at - 20), Math.min(s.length(), at + 20));
    }

    /**
     * Returns the string value of the first {@code "key":"..."} in {@code json}, unescaped, or null when
     * there is none (or it is not a string). Enough for the chunks of an OpenAI stream, whose top-level
     * {@code id} comes before any other.
     */
    static String jsonString(String json, String key) {
        String k = "\"" + key + "\":";
        int at = json.indexOf(k);
        if (at < 0) {
            return null;
        }
        int i = at + k.length();
        while (i < json.length() && json.charAt(i) == ' ') {
            i++;
        }
        if (i >= json.length() || json.charAt(i) != '"') {
            return null;
        }
        StringBuilder sb = new StringBuilder();
        for (i++; i < json.length(); i++) {
            char c = json.charAt(i);
            if (c == '"') {
                return sb.toString();
            }
            if (c == '\\' && i + 1 < json.length()) {
                char e = json.charAt(++i);
                switch (e) {
                    case 'n' -> sb.append('\n');
                    case 't' -> sb.append('\t');
                    case 'r' -> sb.append('\r');
                    case 'u' -> {
                        sb.append((char) Integer.parseInt(json.substring(i + 1, i + 5), 16));
                        i += 4;
                    }
                    default -> sb.append(e);
                }
            } else {
                sb.append(c);
            }
        }
        return null;
    }

    /** Reads one long stream through nginx to its end into {@code r}. */
    void readStream(Read r) {
        try {
            HttpResponse<InputStream> resp = http.send(HttpRequest.newBuilder(
                    URI.create("http://127.0.0.1:" + LB_PORT + "/v1/chat/completions")).timeout(Duration.ofSeconds(60))
                    .header("content-type", "application/json").POST(HttpRequest.BodyPublishers.ofString(LONG_STREAM))
                    .build(), HttpResponse.BodyHandlers.ofInputStream());
            r.status = resp.statusCode();
            long last = 0;
            try (BufferedReader in = new BufferedReader(new InputStreamReader(resp.body(), StandardCharsets.UTF_8))) {
                for (String line; (line = in.readLine()) != null; ) {
                    if (!line.startsWith("data: ")) {
                        continue;
                    }
                    String data = line.substring("data: ".length());
                    if (r.done) {
                        r.afterDone = true;
                    }
                    if (data.equals("[DONE]")) {
                        r.done = true;
                        continue;
                    }
                    String id = jsonString(data, "id");
                    if (id != null) {
                        r.ids.add(id);
                    }
                    if (data.contains("\"role\":\"assistant\"")) {
                        r.roles++;
                    }
                    String content = jsonString(data, "content");
                    if (content != null && !content.isEmpty()) {
                        long now = System.nanoTime();
                        if (r.node == null) {
                            int close = content.indexOf(']');
                            r.node = content.startsWith("[") && close > 1 ? content.substring(1, close) : "?";
                        } else {
                            r.worstGapNanos = Math.max(r.worstGapNanos, now - last);
                        }
                        last = now;
                        r.text.append(content);
                        r.texts.incrementAndGet();
                    }
                }
            }
        } catch (Exception e) {
            r.error = e.toString();
        } finally {
            r.ended = true;
        }
    }

    /** Sums each replica's {@code heartgate_stream_migrations_total} by result; a replica that does not answer adds nothing. */
    Map<String, Long> migrations() {
        Map<String, Long> byResult = new TreeMap<>();
        for (int port : new int[] {19181, 19281}) {
            String body;
            try {
                body = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                        .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString()).body();
            } catch (Exception e) {
                continue;
            }
            for (String line : body.split("\n")) {
                if (line.startsWith("heartgate_stream_migrations_total{")) {
                    int r = line.indexOf("result=\"") + "result=\"".length();
                    String result = line.substring(r, line.indexOf('"', r));
                    long n = (long) Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                    byResult.merge(result, n, Long::sum);
                }
            }
        }
        return byResult;
    }

    /** The scheduler log lines about streams that did not move ("cut", "not continued"), both replicas. */
    List<String> unmovedLogLines() throws IOException {
        List<String> lines = new ArrayList<>();
        for (String r : List.of("A", "B")) {
            for (String line : Files.readAllLines(work.resolve("scheduler-" + r + ".log"))) {
                if (line.contains("Stream of") && !line.contains(" moved from ")) {
                    lines.add(r + ": " + line);
                }
            }
        }
        return lines;
    }

    record Trial(int migrate, int streams, String killed, int onKilled, int completed, int cut, int malformed,
            long worstPauseMs, Map<String, Long> migrations, List<String> faults, List<String> unmoved) {

        String row() {
            String moves = migrations.entrySet().stream().filter(e -> e.getValue() > 0)
                    .map(e -> e.getKey() + " " + e.getValue()).collect(Collectors.joining(", "));
            return String.format("| %17d | %7d | %14s | %9d | %3d | %9d | %14s | %-19s |", migrate, streams,
                    onKilled + " (" + killed + ")", completed, cut, malformed, worstPauseMs < 0 ? "-" : worstPauseMs,
                    moves.isEmpty() ? "none" : moves);
        }
    }

    /**
     * One run of the phase on a fresh fleet whose replicas run with {@code --migrate-streams migrate}:
     * gpu-1 and gpu-2 serve {@link #LONG_MODEL}, gpu-3 another model; agents probe the sims as vLLM
     * (the backend that gets a chat continuation). Starts {@link #MID_STREAMS} streams through nginx,
     * waits until each has read {@link #MID_KILL_AFTER} text events, SIGKILLs the server of the node
     * holding the most (its agent keeps running and reports it DOWN), and reads every stream to its end:
     * complete when it ends with {@code [DONE]}, one role chunk, one id, and the text the first node
     * would have sent whole; cut when it ends without {@code [DONE]}; malformed otherwise.
     */
    Trial killMidStream(int migrate) throws Exception {
        migrateStreams = migrate;
        startSim(1, LONG_MODEL, MID_TOKENS, "50ms");
        startSim(2, LONG_MODEL, MID_TOKENS, "50ms");
        startSim(3, "llama3:8b", MID_TOKENS, "50ms");
        startScheduler("A");
        waitUntil("the embedded broker", 120_000, () -> logHas("scheduler-A", "proxy listening on"));
        for (int i = 1; i <= 3; i++) {
            // The agent's default probe timeout (2 s): with 300 ms, a probe of the surviving node can time
            // out while 40 streams start on two cores and hold it out at the moment of the kill; the
            // stream then has no node to move to, which tests the probe rather than the move.
            startAgent(i, "vllm", "2s");
        }
        startScheduler("B");
        startNginx();
        waitUntil("3 routable vLLM nodes on both replicas", 90_000, () -> routable("A") == 3 && routable("B") == 3
                && occurrences(adminNodes("A"), "\"backend\":\"vllm\"") == 3
                && occurrences(adminNodes("B"), "\"backend\":\"vllm\"") == 3);
        System.err.println("  (" + clock() + ") --migrate-streams " + migrate
                + ": fleet ready, logs in " + work);

        List<Read> reads = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(MID_STREAMS);
        for (int i = 0; i < MID_STREAMS; i++) {
            Read r = new Read();
            reads.add(r);
            pool.submit(() -> readStream(r));
        }
        pool.shutdown();
        waitUntil("every stream " + MID_KILL_AFTER + " tokens in", 60_000,
                () -> reads.stream().allMatch(r -> r.ended || r.texts.get() >= MID_KILL_AFTER));
        Map<String, Long> perNode = reads.stream().filter(r -> !r.ended && r.node != null)
                .collect(Collectors.groupingBy(r -> r.node, TreeMap::new, Collectors.counting()));
        String killed = perNode.entrySet().stream().max(Map.Entry.comparingByValue())
                .orElseThrow(() -> new IllegalStateException("no stream in flight")).getKey();
        List<Read> onKilled = reads.stream().filter(r -> !r.ended && killed.equals(r.node)).toList();
        kill("sim-" + killed.substring("gpu-".length())); // SIGKILL; its agent keeps running and reports it DOWN
        System.err.println("  (" + clock() + ") in flight per node " + perNode
                + "; SIGKILLed the server of " + killed + " (agent left running)");
        if (!pool.awaitTermination(90, TimeUnit.SECONDS)) {
            throw new IllegalStateException("streams still open 90 s after the kill");
        }

        List<String> faults = new ArrayList<>();
        int completed = 0;
        int cut = 0;
        int malformed = 0;
        for (int i = 0; i < reads.size(); i++) {
            Read r = reads.get(i);
            String fault = r.fault();
            if (fault == null) {
                completed++;
            } else {
                if (r.done) {
                    malformed++;
                } else {
                    cut++;
                }
                faults.add("stream " + i + " on " + r.node + (onKilled.contains(r) ? " (killed)" : "") + ": " + fault);
            }
        }
        long worstPause = onKilled.stream().filter(r -> r.fault() == null).mapToLong(r -> r.worstGapNanos).max()
                .stream().map(TimeUnit.NANOSECONDS::toMillis).findFirst().orElse(-1);
        return new Trial(migrate, reads.size(), killed, onKilled.size(), completed, cut, malformed, worstPause,
                migrations(), faults, unmovedLogLines());
    }

    /**
     * bench/chaos.sh --phase kill-mid-stream: the phase with stream migration on and then off, each on
     * a fresh fleet; prints a row for each. Returns 1 when with migration on any stream was cut or
     * malformed, or fewer than 20 streams were on the killed node; or when with it off none was cut
     * (then the kill missed the streams and the first row proves nothing).
     */
    static int killMidStreamPhase() throws Exception {
        System.out.println("kill-mid-stream: gpu-1, gpu-2 serve " + LONG_MODEL + ", gpu-3 llama3:8b (idle); agents --backend "
                + "vllm at 500 ms; replicas A, B behind nginx; " + MID_STREAMS + " streams of " + MID_TOKENS
                + " tokens at 50 ms; after " + MID_KILL_AFTER + " tokens each, SIGKILL the server holding the most (agent left running)");
        List<Trial> trials = new ArrayList<>();
        for (int migrate : new int[] {1, 0}) {
            Chaos c = new Chaos(Files.createTempDirectory("heartgate-chaos-mid-stream"));
            Runtime.getRuntime().addShutdownHook(new Thread(c::stopAll));
            try {
                trials.add(c.killMidStream(migrate));
            } finally {
                c.stopAll();
            }
        }
        System.out.println("| --migrate-streams | streams | on killed node | completed | cut | malformed | worst pause ms | migrations (metric) |");
        System.out.println("|-------------------|---------|----------------|-----------|-----|-----------|----------------|---------------------|");
        for (Trial t : trials) {
            System.out.println(t.row());
        }
        for (Trial t : trials) {
            t.faults().stream().limit(5).forEach(f -> System.out.println("    --migrate-streams " + t.migrate() + ", " + f));
            if (t.faults().size() > 5) {
                System.out.println("    --migrate-streams " + t.migrate() + ", " + (t.faults().size() - 5) + " more");
            }
            if (t.migrate() > 0) {
                t.unmoved().stream().limit(5).forEach(l -> System.out.println("    log " + l));
            }
        }
        Trial on = trials.get(0);
        Trial off = trials.get(1);
        List<String> broke = new ArrayList<>();
        if (on.cut() + on.malformed() > 0) {
            broke.add((on.cut() + on.malformed()) + " streams cut or malformed with migration on");
        }
        if (on.onKilled() < 20) {
            broke.add("only " + on.onKilled() + " streams on the killed node");
        }
        if (off.cut() == 0) {
            broke.add("no stream cut with migration off: the kill missed the streams");
        }
        System.out.println("kill-mid-stream: " + (broke.isEmpty() ? "ok" : "FAILED: " + String.join("; ", broke)));
        return broke.isEmpty() ? 0 : 1;
    }
}

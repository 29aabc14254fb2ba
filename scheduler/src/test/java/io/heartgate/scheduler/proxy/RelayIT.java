package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.config.ProxyConfigBuilder;
import io.heartgate.scheduler.health.PassiveHealth;
import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.proxy.stage.Stages;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.routing.RouteSelector;
import io.heartgate.scheduler.status.Draining;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.time.Ticker;
import io.heartgate.scheduler.tracing.Tracing;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.vertx.core.json.JsonObject;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.UnaryOperator;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The relay's HTTP/1.1 details over real sockets, with scripted nodes (no Kafka: the table is fed
 * directly): what reaches the node, framing, pipelining, 100-continue, malformed requests,
 * informational answers, stale pooled connections and back-pressure. Every test runs once per I/O
 * transport this host offers (epoll, NIO), since {@code --transport} lets an operator pick any of
 * them. io_uring runs only with {@code -Dheartgate.test.ioUring=true}: it is off by default because
 * it closes a client connection without an answer now and then (seen here and in RescueIT), which
 * would make this suite fail at random until that is fixed.
 */
@ParameterizedClass(name = "transport {0}")
@MethodSource("transports")
class RelayIT {

    /** The concrete transports available here; NIO always is. */
    static List<Transport> transports() {
        List<Transport> available = new ArrayList<>();
        List<Transport> wanted = Boolean.getBoolean("heartgate.test.ioUring")
                ? List.of(Transport.IO_URING, Transport.EPOLL) : List.of(Transport.EPOLL);
        for (Transport t : wanted) {
            try {
                available.add(t.resolve());
            } catch (IllegalArgumentException e) {
                System.out.println("[heartgate-test] RelayIT without " + t.flagValue() + ": " + e.getMessage());
            }
        }
        available.add(Transport.NIO);
        return available;
    }

    @Parameter
    Transport transport;

    private static final String CHAT = "{\"model\":\"llama3:8b\",\"messages\":[]}";

    private final List<AutoCloseable> closing = new ArrayList<>();
    private ProxyServer proxy;
    private ProxyCounters counters;
    private PassiveHealth health;

    @AfterEach
    void tearDown() throws Exception {
        if (proxy != null) {
            proxy.close();
        }
        for (AutoCloseable c : closing) {
            c.close();
        }
    }

    /** A node that answers every request 200 with {@code body}, keeping its connections open. */
    private RawNode answering(String body) throws IOException {
        return node((req, out) -> {
            RawNode.respond(out, "200 OK", "", body);
            return true;
        });
    }

    private RawNode node(RawNode.Script script) throws IOException {
        RawNode n = new RawNode(script);
        closing.add(n);
        return n;
    }

    private void start(UnaryOperator<ProxyConfigBuilder> config, RawNode... nodes) {
        start(config, List.of(nodes).stream().map(RawNode::url).toList());
    }

    private void start(UnaryOperator<ProxyConfigBuilder> config, List<String> urls) {
        start(config, urls, null);
    }

    private void start(UnaryOperator<ProxyConfigBuilder> config, List<String> urls, SslContext tls) {
        NodeTable table = new NodeTable(Clock.systemUTC(), 3, Duration.ofMillis(50));
        for (int i = 0; i < urls.size(); i++) {
            table.apply(Heartbeat.builder("n" + (i + 1), urls.get(i)).instance("i1").seq(1L).state(NodeState.UP)
                    .intervalMs(60_000).models(List.of("llama3:8b")).build(), Instant.now());
        }
        table.publish();
        ProxyConfig c = config.apply(new ProxyConfigBuilder().transport(transport)).build();
        health = new PassiveHealth(Clock.systemUTC(), c.ejectAfter(), c.ejectFor(), Duration.ofMinutes(5));
        counters = new ProxyCounters();
        RouteSelector selector = new RouteSelector(Strategy.ROUND_ROBIN.create());
        RequestMetrics metrics = new RequestMetrics(new SimpleMeterRegistry(), Ticker.SYSTEM);
        proxy = tls == null
                ? ProxyServer.start(c, table::snapshot, selector, health, health, counters, metrics, Ticker.SYSTEM, new Draining(),
                        Stages.Access.OPEN, null, Tracing.OFF)
                : ProxyServer.start(c, table::snapshot, selector, health, health, counters, metrics, Ticker.SYSTEM, new Draining(),
                        Stages.Access.OPEN, null, tls);
    }

    private Socket client() throws IOException {
        Socket s = new Socket(InetAddress.getLoopbackAddress(), proxy.port());
        s.setSoTimeout(10_000);
        closing.add(s);
        return s;
    }

    private static void send(Socket s, String text) throws IOException {
        s.getOutputStream().write(text.getBytes(StandardCharsets.UTF_8));
        s.getOutputStream().flush();
    }

    private static String post(String path, String extraHeaders, String body) {
        return "POST " + path + " HTTP/1.1\r\nhost: front.example\r\ncontent-type: application/json\r\n" + extraHeaders
                + "content-length: " + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
    }

    /** One response as the client read it: status line, headers (lower-case names), decoded body. */
    record Response(String statusLine, Map<String, String> headers, String body) {
        int status() {
            return Integer.parseInt(statusLine.split(" ")[1]);
        }

        String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }
    }

    /** Reads one response: by content-length, chunks, or to the end of the stream. */
    private static Response read(InputStream in) throws IOException {
        String statusLine = RawNode.line(in);
        assertThat(statusLine).as("a status line").isNotNull();
        Map<String, String> headers = new TreeMap<>();
        for (String h; (h = RawNode.line(in)) != null && !h.isEmpty(); ) {
            int colon = h.indexOf(':');
            headers.put(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim());
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        if (statusLine.contains(" 100 ")) {
            return new Response(statusLine, headers, "");
        }
        if (headers.containsKey("content-length")) {
            body.write(in.readNBytes(Integer.parseInt(headers.get("content-length"))));
        } else if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
            for (int i = 0; i < 100_000; i++) {
                int size = Integer.parseInt(RawNode.line(in).split(";")[0].trim(), 16);
                if (size == 0) {
                    RawNode.line(in);
                    break;
                }
                body.write(in.readNBytes(size));
                RawNode.line(in);
            }
        } else {
            body.write(in.readAllBytes());
        }
        return new Response(statusLine, headers, body.toString(StandardCharsets.UTF_8));
    }

    @Test
    void rewritesHopByHopAndForwardedHeadersBothWaysAndReusesOneUpstreamConnection() throws Exception {
        RawNode n = node((req, out) -> {
            RawNode.respond(out, "200 OK", "connection: keep-alive, x-node-private\r\nkeep-alive: timeout=5\r\n"
                    + "x-node-private: p\r\nx-node-public: q\r\n", "ok " + req.index());
            return true;
        });
        start(c -> c, n);
        Socket s = client();
        for (int i = 0; i < 5; i++) {
            send(s, post("/v1/chat/completions", "connection: keep-alive, x-secret\r\nx-secret: s\r\n"
                    + "keep-alive: timeout=5\r\nte: trailers\r\nproxy-authorization: basic x\r\nupgrade: h2c\r\n"
                    + "x-forwarded-for: 10.0.0.1\r\nx-kept: yes\r\n", CHAT));
            Response r = read(s.getInputStream());
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.body()).isEqualTo("ok " + i);
            assertThat(r.header("x-upstream-node")).isEqualTo("n1");
            assertThat(r.header("x-node-public")).isEqualTo("q");
            assertThat(r.headers()).doesNotContainKeys("keep-alive", "x-node-private");
        }
        RawNode.Seen seen = n.seen.get(0);
        assertThat(seen.requestLine()).isEqualTo("POST /v1/chat/completions HTTP/1.1");
        assertThat(seen.headers()).doesNotContainKeys("connection", "x-secret", "keep-alive", "te", "proxy-authorization",
                "upgrade");
        assertThat(seen.header("host")).isEqualTo("127.0.0.1:" + n.port());
        assertThat(seen.header("x-forwarded-for")).isEqualTo("10.0.0.1, 127.0.0.1");
        assertThat(seen.header("x-forwarded-proto")).isEqualTo("http");
        assertThat(seen.header("x-forwarded-host")).isEqualTo("front.example");
        assertThat(seen.header("x-kept")).isEqualTo("yes");
        assertThat(new String(seen.body(), StandardCharsets.UTF_8)).isEqualTo(CHAT);
        // Five sequential requests on one client connection stay on its event loop: one pooled connection.
        assertThat(n.connections.get()).isEqualTo(1);
    }

    @Test
    void aCloseDelimitedAnswerIsChunkedForHttp11AndCloseDelimitedForHttp10() throws Exception {
        RawNode n = node((req, out) -> {
            out.write("HTTP/1.0 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil close".getBytes(StandardCharsets.UTF_8));
            return false;
        });
        start(c -> c, n);
        Socket s = client();
        for (int i = 0; i < 2; i++) { // the client connection stays usable
            send(s, post("/x", "", CHAT));
            Response r = read(s.getInputStream());
            assertThat(r.header("transfer-encoding")).isEqualTo("chunked");
            assertThat(r.body()).isEqualTo("until close");
        }
        Socket old = client();
        send(old, "GET /x HTTP/1.0\r\n\r\n");
        Response r = read(old.getInputStream()); // reads to the end of the stream: the proxy closes it
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.headers()).doesNotContainKey("transfer-encoding");
        assertThat(r.body()).isEqualTo("until close");
    }

    @Test
    void aNodeNamedByHostNameIsResolvedWithoutBlockingAndGetsItsNameAsHost() throws Exception {
        RawNode n = answering("named");
        start(c -> c, List.of("http://localhost:" + n.port() + "/base"));
        Socket s = client();
        send(s, post("/v1/models", "", ""));
        Response r = read(s.getInputStream());
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.body()).isEqualTo("named");
        assertThat(n.seen.get(0).header("host")).isEqualTo("localhost:" + n.port());
        assertThat(n.seen.get(0).requestLine()).isEqualTo("POST /base/v1/models HTTP/1.1");
    }

    /** A self-signed certificate for localhost and 127.0.0.1, made with the JDK's keytool. */
    private static Path certificate(Path dir) throws Exception {
        String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        Path store = dir.resolve("node.p12");
        run(keytool, "-genkeypair", "-keystore", store.toString(), "-storetype", "PKCS12", "-storepass", "changeit",
                "-alias", "node", "-keyalg", "RSA", "-keysize", "2048", "-dname", "CN=localhost", "-validity", "2",
                "-ext", "SAN=dns:localhost,ip:127.0.0.1");
        run(keytool, "-exportcert", "-rfc", "-keystore", store.toString(), "-storepass", "changeit", "-alias", "node",
                "-file", dir.resolve("node.pem").toString());
        return store;
    }

    private static void run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
    }

    private RawNode tlsNode(Path store) throws Exception {
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(store)) {
            ks.load(in, "changeit".toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, "changeit".toCharArray());
        SSLContext ssl = SSLContext.getInstance("TLS");
        ssl.init(kmf.getKeyManagers(), null, null);
        RawNode n = new RawNode((req, out) -> {
            RawNode.respond(out, "200 OK", "", "over tls");
            return true;
        }, ssl.getServerSocketFactory().createServerSocket(0, 50, InetAddress.getLoopbackAddress()), "https");
        closing.add(n);
        return n;
    }

    @Test
    void anHttpsNodeIsReachedOverVerifiedTls(@TempDir Path dir) throws Exception {
        Path store = certificate(dir);
        RawNode n = tlsNode(store);
        SslContext trusting = SslContextBuilder.forClient().endpointIdentificationAlgorithm("HTTPS")
                .trustManager(dir.resolve("node.pem").toFile()).build();
        start(c -> c, List.of("https://localhost:" + n.port()), trusting);
        Socket s = client();
        for (int i = 0; i < 2; i++) {
            send(s, post("/v1/chat/completions", "", CHAT));
            Response r = read(s.getInputStream());
            assertThat(r.status()).isEqualTo(200);
            assertThat(r.body()).isEqualTo("over tls");
        }
        assertThat(n.seen.get(0).header("host")).isEqualTo("localhost:" + n.port());
        assertThat(n.connections.get()).as("the TLS connection is pooled").isEqualTo(1);
    }

    @Test
    void anHttpsNodeWithACertificateNobodyTrustsFailsLikeARefusedConnection(@TempDir Path dir) throws Exception {
        RawNode n = tlsNode(certificate(dir));
        start(c -> c, List.of("https://localhost:" + n.port())); // the JVM's CAs: the self-signed one is not among them
        Socket s = client();
        send(s, post("/v1/chat/completions", "", CHAT));
        Response r = read(s.getInputStream());
        assertThat(r.status()).isEqualTo(502);
        JsonObject error = new JsonObject(r.body()).getJsonObject("error");
        assertThat(error.getString("type")).isEqualTo("upstream_unreachable");
        assertThat(error.getString("message")).contains("n1: SSL");
        assertThat(counters.get(Counter.CONNECT_FAILURES)).isEqualTo(1);
        assertThat(n.seen).isEmpty();
    }

    @Test
    void theClientsConnectionHeaderDecidesWhetherItsConnectionStaysOpen() throws Exception {
        RawNode n = answering("ok");
        start(c -> c, n);
        Socket closing = client();
        send(closing, post("/x", "connection: close\r\n", CHAT));
        Response r = read(closing.getInputStream());
        assertThat(r.header("connection")).isEqualTo("close");
        assertThat(closing.getInputStream().read()).as("closed after the response").isEqualTo(-1);

        Socket old = client(); // HTTP/1.0 asking for keep-alive: told so, and the connection serves a second request
        for (int i = 0; i < 2; i++) {
            send(old, "GET /x HTTP/1.0\r\nconnection: keep-alive\r\n\r\n");
            Response kept = read(old.getInputStream());
            assertThat(kept.status()).isEqualTo(200);
            assertThat(kept.header("connection")).isEqualTo("keep-alive");
        }
        assertThat(n.seen).hasSize(3);
    }

    @Test
    void pipelinedRequestsAreAnsweredInOrder() throws Exception {
        RawNode n = node((req, out) -> {
            RawNode.respond(out, "200 OK", "", req.requestLine().split(" ")[1]);
            return true;
        });
        start(c -> c, n);
        Socket s = client();
        StringBuilder three = new StringBuilder();
        for (int i = 1; i <= 3; i++) {
            three.append(post("/p" + i, "", CHAT));
        }
        send(s, three.toString());
        for (int i = 1; i <= 3; i++) {
            assertThat(read(s.getInputStream()).body()).isEqualTo("/p" + i);
        }
    }

    @Test
    void expectContinueGetsContinueOrTheContract413() throws Exception {
        RawNode n = node((req, out) -> {
            assertThat(req.headers()).doesNotContainKey("expect");
            RawNode.respond(out, "200 OK", "", new String(req.body(), StandardCharsets.UTF_8));
            return true;
        });
        start(c -> c.maxBodyBytes(1024), n);
        Socket s = client();
        send(s, "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: "
                + CHAT.length() + "\r\n\r\n");
        assertThat(read(s.getInputStream()).statusLine()).isEqualTo("HTTP/1.1 100 Continue");
        send(s, CHAT);
        Response ok = read(s.getInputStream());
        assertThat(ok.status()).isEqualTo(200);
        assertThat(ok.body()).isEqualTo(CHAT);

        Socket big = client();
        send(big, "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 5000\r\n\r\n");
        Response tooLarge = read(big.getInputStream());
        assertThat(tooLarge.status()).isEqualTo(413);
        assertThat(new JsonObject(tooLarge.body()).getJsonObject("error").getString("type")).isEqualTo("request_too_large");
        assertThat(big.getInputStream().read()).as("connection closed").isEqualTo(-1);
        assertThat(n.seen).hasSize(1);
        assertThat(counters.errors(ErrorType.REQUEST_TOO_LARGE)).isEqualTo(1);
    }

    /** Requests that break a framing rule of RFC 9112: each gets 400 and a closed connection, and no node sees it. */
    static List<String> unframeable() {
        return List.of(
                "POST /x HTTP/1.1\r\nhost: x\r\ntransfer-encoding: gzip\r\n\r\nGET /smuggled HTTP/1.1\r\nhost: x\r\n\r\n",
                "POST /x HTTP/1.1\r\nhost: x\r\ntransfer-encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                "POST /x HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\ntransfer-encoding: identity\r\n\r\n0\r\n\r\n",
                "POST /x HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
                "POST /x HTTP/1.1\r\nhost: x\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nhost: x\r\n\r\n",
                "GET /x HTTP/1.1\r\n\r\n",
                "GET /x HTTP/1.1\r\nhost: a\r\nhost: b\r\n\r\n",
                "GET http://other.example/x HTTP/1.1\r\nhost: front.example\r\n\r\n",
                "POST /x HTTP/1.2\r\nhost: x\r\ncontent-length: 6\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\nX",
                "POST /x http/1.1\r\nhost: x\r\ncontent-length: 6\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\nX",
                "POST /x http/1.0\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
                "POST /x HTTP/1.1\r\nhost: x\r\ntransfer-encoding:\r\n chunked\r\n\r\n0\r\n\r\n",
                "POST /x HTTP/1.1\r\nhost: x\r\ntransfer-encoding: gzip\r\nexpect: 100-continue\r\n\r\n"
                        + "POST /y HTTP/1.1\r\nhost: x\r\nexpect: 100-continue\r\ncontent-length: 9\r\n\r\n",
                "GET /x HTTP/1.1\r\nhost: a b\r\n\r\n",
                "GET http://evil@front.example/x HTTP/1.1\r\nhost: front.example\r\n\r\n",
                "GET ftp://front.example/x HTTP/1.1\r\nhost: front.example\r\n\r\n");
    }

    @Test
    void everyFramingRuleOfRfc9112Is400AndAClosedConnectionAndNothingReachesANode() throws Exception {
        eachIs400AndAClosedConnectionAndNothingReachesANode(unframeable());
    }

    /**
     * What Netty's decoder already refused before the strict framing rules, kept: bare LF line ends,
     * NUL in a header, and chunk sizes that are not hex, overflow or are not followed by their data's CRLF.
     */
    static List<String> refusedByTheDecoder() {
        return List.of(
                "GET /x HTTP/1.1\nhost: x\n\n",
                "GET /x HTTP/1.1\r\nhost: x\nx-a: b\r\n\r\n",
                "GET /x HTTP/1.1\r\nhost: x\r\nx-a: b\u0000c\r\n\r\n",
                "POST /x HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
                "POST /x HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n-3\r\nabc\r\n0\r\n\r\n",
                "POST /x HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n1ffffffffffffffff\r\nabc\r\n0\r\n\r\n",
                "POST /x HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabcGET /smuggled HTTP/1.1\r\n\r\n0\r\n\r\n");
    }

    @Test
    void bareLineFeedsNulAndBadChunkSizesAre400AndAClosedConnectionAndNothingReachesANode() throws Exception {
        eachIs400AndAClosedConnectionAndNothingReachesANode(refusedByTheDecoder());
    }

    /**
     * Sends each request on a connection of its own to a proxy in front of one recording node: each
     * gets 400 bad_request and a closed connection, and the node sees none of them.
     */
    private void eachIs400AndAClosedConnectionAndNothingReachesANode(List<String> cases) throws Exception {
        RawNode n = answering("ok");
        start(c -> c, n);
        for (String request : cases) {
            Socket s = client();
            send(s, request);
            Response r = read(s.getInputStream());
            assertThat(r.status()).as(request).isEqualTo(400);
            assertThat(new JsonObject(r.body()).getJsonObject("error").getString("type")).isEqualTo("bad_request");
            assertThat(s.getInputStream().read()).as("closed after: " + request).isEqualTo(-1);
        }
        assertThat(n.seen).isEmpty();
        assertThat(counters.errors(ErrorType.BAD_REQUEST)).isEqualTo(cases.size());
    }

    /**
     * Paths a node would decode into another path than the one the stages judged: an encoded slash,
     * backslash or NUL, dot segments written or encoded, and malformed escapes.
     */
    static List<String> ambiguousPaths() {
        return List.of(
                "POST /api%2Fpull HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}",
                "POST /api%2fpull HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}",
                "POST /api%5Cpull HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}",
                "GET /api/tags%00 HTTP/1.1\r\nhost: x\r\n\r\n",
                "POST /api/x/../pull HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}",
                "POST /api/x/%2E%2E/pull HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}",
                "GET /./api/tags HTTP/1.1\r\nhost: x\r\n\r\n",
                "GET /api/tags/.. HTTP/1.1\r\nhost: x\r\n\r\n",
                "GET /api/tags%zz HTTP/1.1\r\nhost: x\r\n\r\n",
                "GET /api/tags% HTTP/1.1\r\nhost: x\r\n\r\n");
    }

    @Test
    void pathsANodeWouldDecodeIntoAnotherAre400AndAClosedConnectionAndNothingReachesANode() throws Exception {
        eachIs400AndAClosedConnectionAndNothingReachesANode(ambiguousPaths());
    }

    @Test
    void escapedLettersInAPathAreJudgedAndForwardedDecoded() throws Exception {
        RawNode n = answering("ok");
        start(c -> c, n);
        Socket s = client();
        // Ollama (Go) routes on the decoded path: this is /api/pull, which the scheduler refuses by default.
        send(s, post("/api/pul%6C", "", "{\"model\":\"llama3:8b\"}"));
        Response refused = read(s.getInputStream());
        assertThat(refused.status()).isEqualTo(405);
        assertThat(new JsonObject(refused.body()).getJsonObject("error").getString("type"))
                .isEqualTo("management_disabled");

        send(s, "GET /api/versio%6E?q=%2F HTTP/1.1\r\nhost: x\r\n\r\n");
        assertThat(read(s.getInputStream()).status()).isEqualTo(200);
        // A model id with a slash, as openai-node escapes it: the catalogue's to answer, not a bad request.
        send(s, "GET /v1/models/meta-llama%2FLlama-3.1-8B HTTP/1.1\r\nhost: x\r\n\r\n");
        Response model = read(s.getInputStream());
        assertThat(model.status()).isEqualTo(404);
        assertThat(new JsonObject(model.body()).getJsonObject("error").getString("type")).isEqualTo("model_not_found");
        assertThat(n.seen).hasSize(1);
        assertThat(n.seen.get(0).requestLine()).as("the query is left as sent")
                .isEqualTo("GET /api/version?q=%2F HTTP/1.1");
    }

    @Test
    void anAbsoluteFormTargetReachesTheNodeInOriginFormOnce() throws Exception {
        RawNode n = answering("ok");
        start(c -> c, n);
        Socket s = client();
        send(s, "GET http://front.example:80/api/version?x=1 HTTP/1.1\r\nhost: FRONT.example\r\n\r\n");

        assertThat(read(s.getInputStream()).status()).isEqualTo(200);
        assertThat(n.seen).hasSize(1);
        assertThat(n.seen.get(0).requestLine()).isEqualTo("GET /api/version?x=1 HTTP/1.1");
        assertThat(n.seen.get(0).headers()).containsEntry("x-forwarded-host", "FRONT.example");
    }

    @Test
    void aNodeNameResolvingOutsideTheAllowListIsNotConnectedTo() throws Exception {
        RawNode n = answering("ok");
        // localhost is a name the list allows, but it resolves to loopback, which the list does not.
        start(c -> c.allowUpstream("localhost,10.0.0.0/8"), List.of("http://localhost:" + n.port()));
        Socket s = client();
        send(s, post("/v1/chat/completions", "", CHAT));

        Response r = read(s.getInputStream());
        assertThat(r.status()).isEqualTo(502);
        assertThat(new JsonObject(r.body()).getJsonObject("error").getString("message"))
                .contains("localhost resolves to").contains("outside --allow-upstream");
        assertThat(n.seen).isEmpty();
        assertThat(counters.get(Counter.CONNECT_FAILURES)).isEqualTo(1);
    }

    @Test
    void aNodeNameResolvingInsideTheAllowListIsServed() throws Exception {
        RawNode n = answering("ok");
        start(c -> c.allowUpstream("localhost,127.0.0.0/8"), List.of("http://localhost:" + n.port()));
        Socket s = client();
        send(s, post("/v1/chat/completions", "", CHAT));

        assertThat(read(s.getInputStream()).body()).isEqualTo("ok");
        assertThat(n.seen).hasSize(1);
    }

    @Test
    void aMalformedRequestGets400AndTheConnectionCloses() throws Exception {
        RawNode n = node((req, out) -> false);
        start(c -> c, n);
        Socket s = client();
        send(s, "POST /x HTTP/1.1\r\nhost: x\r\ncontent-length: 12\r\ncontent-length: 3\r\n\r\nabc");
        Response r = read(s.getInputStream());
        assertThat(r.status()).isEqualTo(400);
        assertThat(new JsonObject(r.body()).getJsonObject("error").getString("type")).isEqualTo("bad_request");
        assertThat(s.getInputStream().read()).isEqualTo(-1);
        assertThat(n.seen).isEmpty();
        assertThat(counters.errors(ErrorType.BAD_REQUEST)).isEqualTo(1);
    }

    @Test
    void informationalAnswersOfTheNodeAreNotPassedOnAsTheResponse() throws Exception {
        RawNode n = node((req, out) -> {
            out.write("HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n".getBytes(StandardCharsets.UTF_8));
            RawNode.respond(out, "200 OK", "", "final");
            return true;
        });
        start(c -> c, n);
        Socket s = client();
        send(s, post("/x", "", CHAT));
        Response r = read(s.getInputStream());
        assertThat(r.status()).isEqualTo(200);
        assertThat(r.body()).isEqualTo("final");
    }

    @Test
    void aPooledConnectionTheNodeClosedIsReplacedWithoutFailingTheRequest() throws Exception {
        // The node answers the first request on each connection and closes the connection when a
        // second one arrives, unanswered: a keep-alive timeout racing the proxy's reuse.
        RawNode n = node((req, out) -> {
            if (req.index() > 0) {
                return false;
            }
            RawNode.respond(out, "200 OK", "", "ok");
            return true;
        });
        start(c -> c, n);
        Socket s = client();
        for (int i = 0; i < 3; i++) {
            send(s, post("/x", "", CHAT));
            Response r = read(s.getInputStream());
            assertThat(r.status()).as("request %d", i).isEqualTo(200);
        }
        assertThat(counters.get(Counter.STALE_CONNECTIONS)).isEqualTo(2);
        assertThat(counters.get(Counter.UPSTREAM_RESETS)).isZero();
        assertThat(health.isEjected("n1")).isFalse();
    }

    @Test
    void aResponseSilentForLongerThanTheIdleTimeoutIsCutWhileLiveResponsesGoOn() throws Exception {
        CountDownLatch released = new CountDownLatch(1);
        closing.add(released::countDown);
        Semaphore liveChunks = new Semaphore(0);
        RawNode n = node((req, out) -> {
            String path = req.requestLine().split(" ")[1];
            if (path.equals("/quick")) {
                RawNode.respond(out, "200 OK", "", "done");
                return true;
            }
            out.write("HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n"
                    .getBytes(StandardCharsets.ISO_8859_1));
            int chunks = path.equals("/live") ? 25 : 1;
            for (int i = 0; i < chunks; i++) {
                if (path.equals("/live")) {
                    awaitPermit(liveChunks); // the test paces the live response
                }
                out.write(("6\r\ntoken\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
            }
            if (path.equals("/stall")) {
                try {
                    released.await(20, TimeUnit.SECONDS); // silent until the test ends
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return false;
            }
            out.write("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
            return true;
        });
        start(c -> c.idleTimeout(Duration.ofMillis(400)), n);

        // Three responses relayed at once on the loops' watch lists: one that stalls, one that keeps
        // sending, one that ends at once (leaving the lists from their middle or end).
        Socket stalled = client();
        send(stalled, post("/stall", "", CHAT));
        InputStream stalledIn = stalled.getInputStream();
        assertThat(RawNode.line(stalledIn)).startsWith("HTTP/1.1 200");
        for (String h; (h = RawNode.line(stalledIn)) != null && !h.isEmpty(); ) {
            // headers
        }
        assertThat(RawNode.line(stalledIn)).isEqualTo("6");
        assertThat(RawNode.line(stalledIn)).isEqualTo("token");
        RawNode.line(stalledIn);
        Socket live = client();
        send(live, post("/live", "", CHAT));
        Socket quick = client();
        send(quick, post("/quick", "", CHAT));
        assertThat(read(quick.getInputStream()).body()).isEqualTo("done");

        // The live response gets a chunk every poll (100 ms) until the stalled one has been cut.
        await().pollInterval(Duration.ofMillis(100)).atMost(Duration.ofSeconds(5)).until(() -> {
            liveChunks.release();
            return counters.get(Counter.TIMEOUTS) > 0;
        });

        // The stalled response is cut: the connection closes without the terminating chunk. When
        // exactly is ExchangeTest's (a fake clock); here it is the bytes on the wire.
        assertThat(stalledIn.read()).as("no terminating chunk, just the close").isEqualTo(-1);
        assertThat(counters.get(Counter.TIMEOUTS)).isEqualTo(1);

        // The live one, never silent for long, is relayed to its end.
        liveChunks.release(25);
        Response r = read(live.getInputStream());
        assertThat(r.body()).isEqualTo("token\n".repeat(25));
        assertThat(counters.get(Counter.TIMEOUTS)).isEqualTo(1);
    }

    @Test
    void aClientConnectionIdleBetweenRequestsForTheKeepAliveTimeoutIsClosedButNotMidResponse() throws Exception {
        CountDownLatch rest = new CountDownLatch(1);
        closing.add(rest::countDown);
        RawNode n = node((req, out) -> {
            if (req.requestLine().contains("/slow")) {
                out.write("HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n"
                        .getBytes(StandardCharsets.ISO_8859_1));
                for (int i = 0; i < 8; i++) {
                    if (i == 1) {
                        try {
                            rest.await(20, TimeUnit.SECONDS); // the test decides when the rest follows
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                    out.write("6\r\ntoken\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                }
                out.write("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                return true;
            }
            RawNode.respond(out, "200 OK", "", "ok");
            return true;
        });
        start(c -> c.keepAliveTimeout(Duration.ofMillis(300)).headerTimeout(Duration.ofMillis(500)), n);

        // A response that lasts longer than the timeout keeps its connection, which then serves more.
        Socket busy = client();
        send(busy, post("/slow", "", CHAT));
        InputStream busyIn = busy.getInputStream();
        await().atMost(Duration.ofSeconds(10)).until(() -> n.seen.size() == 1);
        await().during(Duration.ofMillis(700)).atMost(Duration.ofSeconds(3))
                .until(() -> counters.get(Counter.CLIENT_CANCELLATIONS) == 0);
        rest.countDown();
        assertThat(read(busyIn).body()).isEqualTo("token\n".repeat(8));
        send(busy, post("/again", "", CHAT));
        assertThat(read(busyIn).body()).isEqualTo("ok");

        // Then, idle between requests, it is closed (after exactly the timeout: ClientConnectionTest).
        assertThat(busyIn.read()).as("closed by the proxy").isEqualTo(-1);

        // A client that stopped half-way through its request's headers gets 408 at the header timeout.
        Socket half = client();
        send(half, "POST /v1/chat/completions HTTP/1.1\r\nhost: front.example\r\n");
        assertThat(new String(half.getInputStream().readAllBytes(), StandardCharsets.UTF_8))
                .as("answered, then closed by the proxy").startsWith("HTTP/1.1 408 Request Timeout");
        assertThat(n.seen).hasSize(2);
    }

    /** Waits for one permit, up to 20 s (the node's thread pacing itself on the test). */
    private static void awaitPermit(Semaphore permits) {
        try {
            permits.tryAcquire(20, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void aSlowClientPausesTheNodeInsteadOfBufferingTheWholeResponse() throws Exception {
        int total = 64 << 20;
        AtomicLong written = new AtomicLong();
        RawNode n = node((req, out) -> {
            out.write(("HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: " + total
                    + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            byte[] block = new byte[64 * 1024];
            for (int sent = 0; sent < total; sent += block.length) {
                out.write(block);
                written.addAndGet(block.length);
            }
            return true;
        });
        start(c -> c, n);
        Socket s = client();
        send(s, post("/big", "", CHAT));
        // The client reads nothing: the node must stall once the socket buffers on both sides are full.
        await().atMost(Duration.ofSeconds(10)).until(() -> written.get() > 0);
        await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(10))
                .until(() -> written.get() < total / 2);
        InputStream in = s.getInputStream();
        Response r = read(in);
        assertThat(r.body().length()).isEqualTo(total);
        assertThat(written.get()).isEqualTo(total);
    }
}

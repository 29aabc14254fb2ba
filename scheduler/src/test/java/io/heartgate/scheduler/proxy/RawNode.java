package io.heartgate.scheduler.proxy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A scripted HTTP/1.1 node on a raw socket, for the relay's protocol details (what exactly reaches
 * the node, what it may send back) that a well-behaved simulator never exercises. Each request on
 * each connection is answered by the script; every request it saw is kept.
 */
final class RawNode implements AutoCloseable {

    /** One request as the node read it. */
    record Seen(int connection, int index, String requestLine, Map<String, String> headers, byte[] body) {
        String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }
    }

    /** Answers one request; returns false to close the connection afterwards. */
    interface Script {
        boolean answer(Seen request, OutputStream out) throws IOException;
    }

    private final ServerSocket server;
    private final String scheme;
    private final Script script;
    private final Thread acceptor;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    final List<Seen> seen = new CopyOnWriteArrayList<>();
    final AtomicInteger connections = new AtomicInteger();
    final Map<Integer, Integer> requestsPerConnection = new ConcurrentHashMap<>();

    RawNode(Script script) throws IOException {
        this(script, new ServerSocket(0, 50, InetAddress.getLoopbackAddress()), "http");
    }

    /** A node on a socket of the caller's (a TLS one for an https node). */
    RawNode(Script script, ServerSocket server, String scheme) {
        this.script = script;
        this.server = server;
        this.scheme = scheme;
        this.acceptor = new Thread(this::accept, "raw-node-" + server.getLocalPort());
        acceptor.setDaemon(true);
        acceptor.start();
    }

    String url() {
        return scheme + "://127.0.0.1:" + server.getLocalPort();
    }

    int port() {
        return server.getLocalPort();
    }

    private void accept() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                sockets.add(s);
                int id = connections.incrementAndGet();
                Thread t = new Thread(() -> serve(s, id), "raw-node-conn-" + id);
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private void serve(Socket s, int connection) {
        try (s; InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
            for (int index = 0; index < 10_000; index++) {
                Seen request = read(in, connection, index);
                if (request == null) {
                    return;
                }
                seen.add(request);
                requestsPerConnection.merge(connection, 1, Integer::sum);
                boolean keep = script.answer(request, out);
                out.flush();
                if (!keep) {
                    return;
                }
            }
        } catch (IOException e) {
            // the proxy closed the connection: normal
        }
    }

    private static Seen read(InputStream in, int connection, int index) throws IOException {
        String requestLine = line(in);
        if (requestLine == null) {
            return null;
        }
        Map<String, String> headers = new ConcurrentHashMap<>();
        for (int i = 0; i < 200; i++) {
            String h = line(in);
            if (h == null || h.isEmpty()) {
                break;
            }
            int colon = h.indexOf(':');
            headers.merge(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim(),
                    (a, b) -> a + ", " + b);
        }
        int length = Integer.parseInt(headers.getOrDefault("content-length", "0"));
        byte[] body = in.readNBytes(length);
        return new Seen(connection, index, requestLine, headers, body);
    }

    /** Reads one CRLF-terminated line, or null at end of stream. */
    static String line(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != -1) {
            if (c == '\n') {
                String s = b.toString(StandardCharsets.ISO_8859_1);
                return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
            }
            b.write(c);
            if (b.size() > 100_000) {
                throw new IOException("line too long");
            }
        }
        return b.size() == 0 ? null : b.toString(StandardCharsets.ISO_8859_1);
    }

    /** Writes a whole response with a content-length. */
    static void respond(OutputStream out, String status, String extraHeaders, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        out.write(("HTTP/1.1 " + status + "\r\ncontent-type: text/plain\r\ncontent-length: " + b.length + "\r\n"
                + extraHeaders + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        out.write(b);
    }

    @Override
    public void close() throws IOException {
        server.close();
        for (Socket s : sockets) {
            s.close();
        }
    }
}

package io.heartgate.scheduler.proxy.policy;

import io.heartgate.scheduler.request.Endpoint;
import java.util.List;

/**
 * Checks the framing rules of RFC 9112 that a request must meet before any of it is relayed: a
 * proxy that frames a request differently from the server behind it, or from the CDN in front of
 * it, opens a request-smuggling desync, so every MUST is a 400 and a closed connection. Pure.
 *
 * <p>The rules: a {@code Transfer-Encoding} must be exactly {@code chunked} (its final coding must be
 * chunked, and chunked is the only coding the proxy implements); an HTTP/1.0 request may not carry
 * one; a request may not carry both {@code Transfer-Encoding} and {@code Content-Length} (checked by
 * the decoder, which sees both before Netty drops one); an HTTP/1.1 request needs exactly one
 * {@code Host}; an absolute-form target ({@code http://host/path}) must name the same authority as
 * its {@code Host}, and reaches the node in origin form ({@code /path}); a {@code Host} must be a
 * host and an optional port, nothing else; only HTTP/1.0 and HTTP/1.1 are spoken; a target is a
 * path, an http(s) URL, or {@code *} for OPTIONS.
 */
public final class RequestFraming {

    private RequestFraming() {
    }

    /**
     * Returns what is wrong with a request's framing, or {@code null} when nothing is.
     *
     * @param version the request line's version exactly as sent ({@code HTTP/1.1})
     * @param method the request's method
     * @param uri the request target as sent
     * @param hosts every {@code Host} header value
     * @param transferEncodings every {@code Transfer-Encoding} header value, as the decoder unfolded it
     * @param hasContentLength whether a {@code Content-Length} header is present
     */
    public static String problem(String version, String method, String uri, List<String> hosts,
                                 List<String> transferEncodings, boolean hasContentLength) {
        boolean http10 = version.equals("HTTP/1.0");
        if (!http10 && !version.equals("HTTP/1.1")) {
            return "HTTP version '" + version + "' is not HTTP/1.0 or HTTP/1.1";
        }
        if (!transferEncodings.isEmpty()) {
            if (http10) {
                return "Transfer-Encoding is not allowed on an HTTP/1.0 request";
            }
            // No trim: a value with spaces left around it came from obsolete line folding.
            if (transferEncodings.size() != 1 || !transferEncodings.get(0).equalsIgnoreCase("chunked")) {
                return "Transfer-Encoding must be exactly 'chunked', was '" + String.join(", ", transferEncodings) + "'";
            }
            if (hasContentLength) {
                return "both Transfer-Encoding and Content-Length";
            }
        }
        if (!uri.startsWith("/") && absoluteFormAuthority(uri) == null && !(uri.equals("*") && method.equals("OPTIONS"))) {
            return "request target '" + uri + "' is neither a path, an http(s) URL nor OPTIONS *";
        }
        for (String host : hosts) {
            if (!isHostAndPort(host)) {
                return "Host '" + host + "' is not a host[:port]";
            }
        }
        if (hosts.size() > 1) {
            return "more than one Host header";
        }
        if (hosts.isEmpty() && !http10) {
            return "an HTTP/1.1 request needs a Host header";
        }
        String authority = absoluteFormAuthority(uri);
        if (authority != null && !hosts.isEmpty() && (authority.contains("@") || !sameAuthority(authority, hosts.get(0), uri))) {
            return "Host '" + hosts.get(0) + "' differs from the request target's authority '" + authority + "'";
        }
        return null;
    }

    /**
     * Returns whether {@code host} is {@code uri-host [":" port]}: a bracketed IPv6 literal or a
     * reg-name/IPv4 of unreserved and sub-delims characters, then at most a port. Written as a scan,
     * not a regular expression: it runs once per request.
     */
    static boolean isHostAndPort(String host) {
        int n = host.length();
        int i = 0;
        if (n > 0 && host.charAt(0) == '[') {
            i = host.indexOf(']');
            if (i < 2) {
                return false;
            }
            for (int k = 1; k < i; k++) {
                char c = host.charAt(k);
                if (!(c == ':' || c == '.' || Character.digit(c, 16) >= 0)) {
                    return false;
                }
            }
            i++;
        } else {
            while (i < n && host.charAt(i) != ':') {
                char c = host.charAt(i);
                if (!(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
                        || "-._~%!$&'()*+;=".indexOf(c) >= 0)) {
                    return false;
                }
                i++;
            }
            if (i == 0) {
                return false;
            }
        }
        if (i == n) {
            return true;
        }
        if (host.charAt(i) != ':' || n - i - 1 < 1 || n - i - 1 > 5) {
            return false;
        }
        for (int k = i + 1; k < n; k++) {
            if (host.charAt(k) < '0' || host.charAt(k) > '9') {
                return false;
            }
        }
        return true;
    }

    /**
     * Returns what is wrong with the path of an origin-form {@code uri}, or {@code null}: a malformed
     * percent escape, an encoded slash (but in a model id, {@code /v1/models/{model}}), backslash or
     * NUL, or a {@code .} or {@code ..} segment
     * (written or encoded). The servers behind decode the path before routing it (Go's {@code
     * URL.Path}, Starlette's {@code scope["path"]}), so a path the scheduler reads one way and a node
     * another would slip a call past the stages that judge it by its path ({@code /api/pul%6C} past
     * model management); clients never send these, having normalised the path themselves.
     */
    public static String pathProblem(String uri) {
        int end = pathEnd(uri);
        int pct = uri.indexOf('%');
        if ((pct < 0 || pct >= end) && uri.indexOf("/.") < 0) {
            return null; // nearly every request: two scans, no allocation
        }
        String path = decodeUnreserved(uri.substring(0, end));
        if (path == null) {
            return "request path '" + uri.substring(0, end) + "' has a malformed percent escape";
        }
        // A model id may hold a slash, which clients escape (openai-node: /v1/models/org%2Fname): there
        // it names a model, and a node that decodes it finds no route it would judge differently.
        boolean modelId = path.startsWith(Endpoint.OPENAI_MODEL.path());
        for (int i = path.indexOf('%'); i >= 0; i = path.indexOf('%', i + 1)) {
            int c = Character.digit(path.charAt(i + 1), 16) * 16 + Character.digit(path.charAt(i + 2), 16);
            if (c == '/' && modelId) {
                continue;
            }
            if (c == '/' || c == '\\' || c == 0) {
                return "request path '" + uri.substring(0, end) + "' encodes a slash, a backslash or NUL";
            }
        }
        // Segments as a server or proxy that decodes the slashes too would split them (nginx in front
        // of a node with a base path resolves /v1/models/..%2F..%2Fapi%2Fpull to /api/pull).
        String split = modelId ? path.replace("%2F", "/").replace("%2f", "/") : path;
        for (int from = 0; from < split.length(); ) {
            int next = split.indexOf('/', from + 1);
            String segment = split.substring(from + 1, next < 0 ? split.length() : next);
            if (segment.equals(".") || segment.equals("..")) {
                return "request path '" + uri.substring(0, end) + "' has a '" + segment + "' segment";
            }
            from = next < 0 ? split.length() : next;
        }
        return null;
    }

    /**
     * Returns an origin-form {@code uri} whose path ({@link #pathProblem} found nothing wrong with it)
     * has its percent-encoded unreserved characters decoded: the same path to every server (RFC 3986,
     * 6.2.2.2), in the one form the stages compare. {@code uri} itself when its path has no escape.
     */
    public static String normalPath(String uri) {
        int end = pathEnd(uri);
        int pct = uri.indexOf('%');
        if (pct < 0 || pct >= end) {
            return uri;
        }
        String path = decodeUnreserved(uri.substring(0, end));
        return path == null ? uri : path + uri.substring(end);
    }

    private static int pathEnd(String uri) {
        int q = uri.indexOf('?');
        int f = uri.indexOf('#');
        int end = q < 0 ? uri.length() : q;
        return f < 0 ? end : Math.min(end, f);
    }

    /** Returns {@code path} with its escapes of unreserved characters decoded, or {@code null} for a malformed escape. */
    private static String decodeUnreserved(String path) {
        StringBuilder out = new StringBuilder(path.length());
        for (int i = 0; i < path.length(); i++) {
            char c = path.charAt(i);
            if (c != '%') {
                out.append(c);
                continue;
            }
            if (i + 2 >= path.length() || Character.digit(path.charAt(i + 1), 16) < 0
                    || Character.digit(path.charAt(i + 2), 16) < 0) {
                return null;
            }
            char decoded = (char) (Character.digit(path.charAt(i + 1), 16) * 16 + Character.digit(path.charAt(i + 2), 16));
            if (decoded >= 'a' && decoded <= 'z' || decoded >= 'A' && decoded <= 'Z' || decoded >= '0' && decoded <= '9'
                    || decoded == '-' || decoded == '.' || decoded == '_' || decoded == '~') {
                out.append(decoded);
            } else {
                out.append(path, i, i + 3); // reserved or not ASCII: kept as sent
            }
            i += 2;
        }
        return out.toString();
    }

    /** Returns {@code uri} in origin form: the path and query of an absolute-form target, else {@code uri} itself. */
    public static String originForm(String uri) {
        if (absoluteFormAuthority(uri) == null) {
            return uri;
        }
        int start = uri.indexOf("://") + 3;
        int end = authorityEnd(uri, start);
        if (end == uri.length()) {
            return "/";
        }
        return uri.charAt(end) == '/' ? uri.substring(end) : "/" + uri.substring(end);
    }

    /** Returns the authority of an absolute-form {@code http://} or {@code https://} target, or {@code null}. */
    static String absoluteFormAuthority(String uri) {
        if (uri.isEmpty() || uri.charAt(0) == '/') {
            return null; // origin form, nearly every request: no allocation
        }
        if (!uri.regionMatches(true, 0, "http://", 0, 7) && !uri.regionMatches(true, 0, "https://", 0, 8)) {
            return null;
        }
        int start = uri.indexOf("://") + 3;
        return uri.substring(start, authorityEnd(uri, start));
    }

    private static int authorityEnd(String uri, int start) {
        int end = start;
        while (end < uri.length() && uri.charAt(end) != '/' && uri.charAt(end) != '?' && uri.charAt(end) != '#') {
            end++;
        }
        return end;
    }

    /** Compares authorities without case and with the scheme's default port made explicit. */
    private static boolean sameAuthority(String target, String host, String uri) {
        String port = uri.regionMatches(true, 0, "https", 0, 5) ? ":443" : ":80";
        return withPort(target.trim(), port).equalsIgnoreCase(withPort(host.trim(), port));
    }

    private static String withPort(String authority, String defaultPort) {
        int at = authority.lastIndexOf('@');
        String hostPort = at >= 0 ? authority.substring(at + 1) : authority;
        int colon = hostPort.lastIndexOf(':');
        boolean hasPort = colon > hostPort.lastIndexOf(']');
        return hasPort ? hostPort : hostPort + defaultPort;
    }
}

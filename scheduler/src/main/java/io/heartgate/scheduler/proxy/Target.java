package io.heartgate.scheduler.proxy;

import io.netty.util.NetUtil;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnknownHostException;

/**
 * Holds a node URL taken apart once: host, port, TLS and path prefix, so a request is routed
 * without parsing the URL again. {@code address} is resolved already for an IP literal and left
 * unresolved for a name, which the proxy's non-blocking resolver looks up at connect time.
 */
record Target(String host, int port, boolean ssl, String basePath, String hostHeader, InetSocketAddress address) {

    /** Parses a node URL that the heartbeat rules already accepted. */
    static Target of(String url) {
        URI uri = URI.create(url);
        boolean ssl = "https".equalsIgnoreCase(uri.getScheme());
        String host = uri.getHost();
        int port = uri.getPort();
        if (host == null) {
            // Names with '_' (container networks) leave getHost() null; read the authority instead.
            String authority = uri.getRawAuthority();
            int at = authority.lastIndexOf('@');
            String hostPort = at >= 0 ? authority.substring(at + 1) : authority;
            int colon = hostPort.lastIndexOf(':');
            if (colon > 0 && hostPort.indexOf(']') < colon) {
                host = hostPort.substring(0, colon);
                port = Integer.parseInt(hostPort.substring(colon + 1));
            } else {
                host = hostPort;
            }
        }
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        if (port < 0) {
            port = ssl ? 443 : 80;
        }
        String path = uri.getRawPath() == null ? "" : uri.getRawPath();
        if (path.endsWith("/")) {
            path = path.substring(0, path.length() - 1);
        }
        boolean defaultPort = (ssl && port == 443) || (!ssl && port == 80);
        String hostHeader = (host.contains(":") ? "[" + host + "]" : host) + (defaultPort ? "" : ":" + port);
        return new Target(host, port, ssl, path, hostHeader, address(host, port));
    }

    private static InetSocketAddress address(String host, int port) {
        byte[] ip = NetUtil.createByteArrayFromIpAddressString(host);
        if (ip == null) {
            return InetSocketAddress.createUnresolved(host, port);
        }
        try {
            return new InetSocketAddress(InetAddress.getByAddress(host, ip), port);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("bad address " + host, e); // not reached: the length is 4 or 16
        }
    }
}

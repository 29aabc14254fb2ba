package io.heartgate.protocol;

/**
 * Node URLs of the plain shape, read by hand: nearly every node's URL has it, and recognising it
 * is a fraction of what {@code java.net.URI} costs (a restart decodes hundreds of thousands).
 */
final class PlainUrls {

    private PlainUrls() {
    }

    /**
     * Says whether {@code url} has the shape nearly every node's URL has, {@code http://} or
     * {@code https://}, a host of letters, digits, {@code .}, {@code -} and {@code _}, an optional
     * port of up to 5 digits and an optional path of letters, digits and {@code /._~-}: such a URL
     * passes {@link HeartbeatRules#checkUrl} (java.net.URI accepts it, with a host or a registry authority), and
     * recognising it is a fraction of parsing it. Any other URL takes the full check.
     */
    static boolean matches(String url) {
        int i;
        if (url.startsWith("http://")) {
            i = 7;
        } else if (url.startsWith("https://")) {
            i = 8;
        } else {
            return false;
        }
        int n = url.length();
        int hostStart = i;
        while (i < n && hostChar(url.charAt(i))) {
            i++;
        }
        if (i == hostStart) {
            return false;
        }
        if (i < n && url.charAt(i) == ':') {
            int portStart = ++i;
            while (i < n && url.charAt(i) >= '0' && url.charAt(i) <= '9') {
                i++;
            }
            if (i == portStart || i - portStart > 5) {
                return false;
            }
        }
        if (i < n && url.charAt(i) != '/') {
            return false;
        }
        for (; i < n; i++) {
            char c = url.charAt(i);
            if (!(hostChar(c) || c == '/' || c == '~')) {
                return false;
            }
        }
        return true;
    }

    private static boolean hostChar(char c) {
        return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_';
    }

    /** Returns the host of a URL that {@link #matches}: from after {@code //} to a port, a path or the end. */
    static String host(String url) {
        int start = url.indexOf("//") + 2;
        int end = start;
        while (end < url.length() && hostChar(url.charAt(end))) {
            end++;
        }
        return url.substring(start, end);
    }
}

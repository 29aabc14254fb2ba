package io.heartgate.scheduler.trust;

import io.heartgate.protocol.HeartbeatRules;
import io.heartgate.protocol.InvalidSettingException;
import io.netty.util.NetUtil;
import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Says which addresses the scheduler may send traffic to ({@code --allow-upstream}): a heartbeat is
 * trusted to name its node's URL, so without a list whoever can write one record to the topic can
 * point the proxy, prompts included, at any address (a cloud's metadata service, the scheduler's own
 * loopback). Entries are CIDRs ({@code 10.0.0.0/8}, {@code fd00::/8}), single addresses, and
 * host-name globs ({@code *.gpu.internal}, {@code gpu-?.lan}).
 *
 * <p>A URL naming an address is allowed when a CIDR holds it. A URL naming a host is allowed when a
 * glob matches it, and every address it resolves to is checked again before each connect (so a name
 * cannot be re-pointed at a forbidden address after its heartbeat was accepted): it must be held by a
 * CIDR of the list, or, when the list has no CIDR, must not be loopback, link-local (the metadata
 * services' 169.254.169.254 among them), another cloud's metadata address, NAT64, multicast or
 * this-network; a glob's {@code *} stays within one label. The empty list allows everything.
 * Immutable and thread-safe.
 */
public final class UpstreamAllowList {

    /** The list that allows every address. */
    public static final UpstreamAllowList ALLOW_ALL = new UpstreamAllowList(List.of(), List.of(), "");

    private record Cidr(byte[] network, int prefix) {
        boolean contains(byte[] address) {
            if (address.length != network.length) {
                return false;
            }
            int full = prefix / 8;
            for (int i = 0; i < full; i++) {
                if (address[i] != network[i]) {
                    return false;
                }
            }
            int rest = prefix % 8;
            if (rest == 0) {
                return true;
            }
            int mask = (0xff << (8 - rest)) & 0xff;
            return (address[full] & mask) == (network[full] & mask);
        }
    }

    /** Cloud metadata and host services outside link-local, and this-network: never a node's address. */
    private static final List<Cidr> METADATA = List.of(
            new Cidr(new byte[] {0, 0, 0, 0}, 8),
            new Cidr(new byte[] {100, 100, 100, (byte) 200}, 32), // Alibaba Cloud
            new Cidr(new byte[] {(byte) 168, 63, (byte) 129, 16}, 32), // Azure's wire server
            new Cidr(NetUtil.createByteArrayFromIpAddressString("fd00:ec2::254"), 128), // AWS, over IPv6
            new Cidr(NetUtil.createByteArrayFromIpAddressString("64:ff9b::"), 96)); // NAT64: any IPv4 inside

    private final List<Cidr> cidrs;
    private final List<Pattern> globs;
    private final String text;

    private UpstreamAllowList(List<Cidr> cidrs, List<Pattern> globs, String text) {
        this.cidrs = cidrs;
        this.globs = globs;
        this.text = text;
    }

    /**
     * Parses a comma-separated list; blank gives {@link #ALLOW_ALL}.
     *
     * @throws InvalidSettingException for {@code allowUpstream}, naming the entry it cannot read
     */
    public static UpstreamAllowList parse(String list) {
        if (list == null || list.isBlank()) {
            return ALLOW_ALL;
        }
        List<Cidr> cidrs = new ArrayList<>();
        List<Pattern> globs = new ArrayList<>();
        for (String raw : list.split(",")) {
            String entry = raw.trim();
            if (entry.isEmpty()) {
                continue;
            }
            Cidr cidr = cidr(entry);
            if (cidr != null) {
                cidrs.add(cidr);
            } else if (entry.matches("[A-Za-z0-9*?._-]+") && !entry.matches("[0-9.*?]+")) {
                globs.add(glob(entry));
            } else {
                throw new InvalidSettingException("allowUpstream", "'" + entry
                        + "' is neither a CIDR (10.0.0.0/8, fd00::/8), an address nor a host-name glob (*.gpu.internal)");
            }
        }
        return new UpstreamAllowList(List.copyOf(cidrs), List.copyOf(globs), list.trim());
    }

    private static Cidr cidr(String entry) {
        int slash = entry.indexOf('/');
        String address = slash < 0 ? entry : entry.substring(0, slash);
        byte[] bytes = literal(address);
        if (bytes == null) {
            if (slash >= 0) {
                throw new InvalidSettingException("allowUpstream", "'" + entry + "' is not a CIDR: '" + address
                        + "' is not an address");
            }
            return null;
        }
        int max = bytes.length * 8;
        int prefix = max;
        if (slash >= 0) {
            try {
                prefix = Integer.parseInt(entry.substring(slash + 1));
            } catch (NumberFormatException e) {
                prefix = -1;
            }
            if (prefix < 0 || prefix > max) {
                throw new InvalidSettingException("allowUpstream", "'" + entry + "' needs a prefix of 0 to " + max);
            }
        }
        return new Cidr(bytes, prefix);
    }

    /** Returns the bytes of an IPv4 or IPv6 literal (brackets allowed), or {@code null} for a name. */
    static byte[] literal(String host) {
        String h = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        return NetUtil.createByteArrayFromIpAddressString(h); // a parser of literals: never a lookup
    }

    private static Pattern glob(String entry) {
        StringBuilder re = new StringBuilder();
        for (char c : entry.toLowerCase(Locale.ROOT).toCharArray()) {
            re.append(switch (c) {
                case '*' -> "[a-z0-9_-]*"; // within one label: gpu-* is not gpu-1.attacker.example
                case '?' -> "[a-z0-9_-]";
                case '.' -> "\\.";
                default -> String.valueOf(c);
            });
        }
        return Pattern.compile(re.toString());
    }

    /** Returns whether the list names hosts but no CIDR, so resolved addresses are only checked against a short deny-list. */
    public boolean globsWithoutCidrs() {
        return cidrs.isEmpty() && !globs.isEmpty();
    }

    /** Returns whether the list allows everything. */
    public boolean allowsAll() {
        return cidrs.isEmpty() && globs.isEmpty();
    }

    /** Returns whether a heartbeat may advertise {@code url} (one the heartbeat rules already accepted). */
    public boolean allowsUrl(String url) {
        if (allowsAll()) {
            return true;
        }
        String host = HeartbeatRules.urlHost(url);
        if (host == null) {
            return false;
        }
        byte[] address = literal(host);
        return address != null ? inCidrs(address) : matchesGlob(host);
    }

    /** Returns whether the proxy may connect to {@code address}, which {@code host} (a name or literal) resolved to. */
    public boolean allowsResolved(InetAddress address) {
        if (allowsAll()) {
            return true;
        }
        if (!cidrs.isEmpty()) {
            return inCidrs(address.getAddress());
        }
        if (address.isLoopbackAddress() || address.isLinkLocalAddress() || address.isAnyLocalAddress()
                || address.isMulticastAddress()) {
            return false;
        }
        byte[] b = address.getAddress();
        for (Cidr c : METADATA) {
            if (c.contains(b)) {
                return false;
            }
        }
        return true;
    }

    private boolean inCidrs(byte[] address) {
        for (Cidr c : cidrs) {
            if (c.contains(address)) {
                return true;
            }
        }
        return false;
    }

    private boolean matchesGlob(String host) {
        String h = host.toLowerCase(Locale.ROOT);
        if (h.endsWith(".")) {
            h = h.substring(0, h.length() - 1);
        }
        for (Pattern p : globs) {
            if (p.matcher(h).matches()) {
                return true;
            }
        }
        return false;
    }

    @Override
    public String toString() {
        return allowsAll() ? "(all)" : text;
    }
}

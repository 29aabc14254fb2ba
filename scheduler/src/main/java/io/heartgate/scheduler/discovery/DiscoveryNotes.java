package io.heartgate.scheduler.discovery;

import io.heartgate.protocol.signing.HeartbeatVerifier;
import io.heartgate.scheduler.trust.UpstreamAllowList;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The start-up lines that say what discovery accepts: signed heartbeats or not, and from which addresses. */
public final class DiscoveryNotes {

    private static final Logger log = LoggerFactory.getLogger(DiscoveryNotes.class);

    private DiscoveryNotes() {
    }

    /** Logs who may speak for nodes on {@code topic} and where their URLs may point. */
    public static void log(String topic, HeartbeatVerifier verifier, UpstreamAllowList allowUpstream) {
        if (verifier != null) {
            log.info("Heartbeats must be signed with one of the keys {} (--heartbeat-keys)", verifier.keys());
        } else {
            log.info("Heartbeats are not signed (no --heartbeat-keys): anyone who can write to {} can "
                    + "speak for any node", topic);
        }
        if (allowUpstream.allowsAll()) {
            log.warn("No --allow-upstream: any record on {} can point the proxy, prompts included, at any address; "
                    + "set it to the CIDRs and host names of your inference nodes", topic);
        } else if (allowUpstream.globsWithoutCidrs()) {
            log.warn("--allow-upstream {} names hosts but no CIDR: their addresses are only kept off loopback, "
                    + "link-local and metadata services; add the nodes' CIDRs so a name cannot lead elsewhere",
                    allowUpstream);
        } else {
            log.info("Nodes may only be at {} (--allow-upstream)", allowUpstream);
        }
    }
}

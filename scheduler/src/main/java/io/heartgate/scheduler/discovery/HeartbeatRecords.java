package io.heartgate.scheduler.discovery;

import io.heartgate.protocol.Decoded;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.protocol.Rejection;
import io.heartgate.protocol.Rule;
import io.heartgate.protocol.signing.HeartbeatSigner;
import io.heartgate.protocol.signing.HeartbeatVerifier;
import io.heartgate.protocol.signing.Verification;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.NodeTable;
import io.heartgate.scheduler.trust.UpstreamAllowList;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.EnumMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides what one record of the heartbeat topic does to the table, and does it: with signing on,
 * its signature first (a forged record costs one MAC, never a parse) and its freshness (a record
 * written to the topic again later is a replay); then its bytes, and its URL against the upstream
 * allow-list. Whatever it refuses is counted and logged at most once a minute per rule. The Kafka
 * side (partitions, offsets, outages) is {@link HeartbeatConsumer}'s. Discovery thread only.
 */
final class HeartbeatRecords {

    private static final Logger log = LoggerFactory.getLogger(HeartbeatRecords.class);
    private static final Duration LOG_EVERY = Duration.ofMinutes(1);
    /** How much older than its broker timestamp a signed record's own time may be (clock skew, retries). */
    private static final Duration REPLAY_WINDOW = Duration.ofSeconds(30);

    private final NodeTable table;
    private final DiscoveryStats stats;
    private final UpstreamAllowList allowUpstream;
    private final HeartbeatVerifier verifier;
    private final HeartbeatCodec codec = new HeartbeatCodec();
    private final Map<Rule, Instant> rejectionLoggedAt = new EnumMap<>(Rule.class);
    private final Map<Rule, Long> rejectionsSinceLog = new EnumMap<>(Rule.class);
    private Instant replayLoggedAt;

    /** Creates the handler; {@code verifier} {@code null} accepts unsigned records. */
    HeartbeatRecords(NodeTable table, DiscoveryStats stats, UpstreamAllowList allowUpstream, HeartbeatVerifier verifier) {
        this.table = table;
        this.stats = stats;
        this.allowUpstream = allowUpstream;
        this.verifier = verifier;
    }

    /** Applies {@code r}, read at {@code now}, to the table, or counts and logs why not. */
    void handle(ConsumerRecord<byte[], byte[]> r, Instant now) {
        stats.received();
        Instant brokerTime = r.timestamp() >= 0 ? Instant.ofEpochMilli(r.timestamp()) : now;
        if (verifier != null) {
            byte[] tombstone = r.value() == null ? lastHeader(r, HeartbeatSigner.TOMBSTONE_HEADER) : null;
            Verification v = verifier.verify(r.key(), r.value(), lastHeader(r, HeartbeatSigner.KEY_ID_HEADER),
                    lastHeader(r, HeartbeatSigner.SIGNATURE_HEADER), tombstone);
            if (v instanceof Verification.Refused refused) {
                rejected(r, refused.rejection(), now);
                return;
            }
            if (tombstone != null && !tombstoneApplies(r, tombstone, brokerTime, now)) {
                return;
            }
        }
        Decoded decoded = codec.decodeRecord(r.key(), r.value());
        if (decoded instanceof Decoded.Beat beat) {
            Heartbeat hb = beat.heartbeat();
            if (!allowUpstream.allowsUrl(hb.url())) {
                // Trusting it would let one record point the proxy, prompts included, at any address.
                rejected(r, new Rejection(Rule.URL_NOT_ALLOWED, "url",
                        "'" + hb.url() + "' is outside --allow-upstream " + allowUpstream), now);
                return;
            }
            if (verifier != null && replayed(hb, brokerTime)) {
                replay("heartbeat", hb.nodeId(), hb.sentAt(), brokerTime, now);
                return;
            }
            NodeTable.Outcome outcome = table.apply(hb, brokerTime);
            stats.outcome(outcome);
            if (outcome == NodeTable.Outcome.STALE_INSTANCE || outcome == NodeTable.Outcome.OLD_SEQ) {
                log.debug("Node {} heartbeat ignored: {}", hb.nodeId(), outcome);
            }
        } else if (decoded instanceof Decoded.Leave leave) {
            stats.tombstone();
            table.remove(leave.nodeId());
        } else if (decoded instanceof Decoded.Rejected bad) {
            rejected(r, bad.rejection(), now);
        }
    }

    /**
     * Returns whether a signed heartbeat was written to the topic again long after its agent sent
     * it: its {@code sentAt} is signed, so it cannot be refreshed, while the broker stamps a copy with
     * the time it arrives. Without this, a captured record of a dead node would revive it for one
     * expiry. The window is the larger of {@link #REPLAY_WINDOW} and three intervals.
     */
    private static boolean replayed(Heartbeat hb, Instant brokerTime) {
        if (hb.sentAt() == null) {
            return true;
        }
        Duration window = Duration.ofMillis(Math.max(REPLAY_WINDOW.toMillis(), 3L * hb.intervalMs()));
        return hb.sentAt().plus(window).isBefore(brokerTime);
    }

    /**
     * Returns whether a signed tombstone may remove its node: its signed {@code "INSTANCE SENT_AT_MS"}
     * header is recent (within {@link #REPLAY_WINDOW} of the broker's timestamp) and names the
     * instance the table lists, so that a tombstone captured from an earlier stop and written again
     * takes no live node out.
     */
    private boolean tombstoneApplies(ConsumerRecord<byte[], byte[]> r, byte[] header, Instant brokerTime, Instant now) {
        String text = new String(header, StandardCharsets.US_ASCII);
        int space = text.lastIndexOf(' ');
        Long sentMs = space <= 0 ? null : parseLong(text.substring(space + 1));
        String id = new String(r.key(), StandardCharsets.UTF_8);
        if (sentMs == null || Instant.ofEpochMilli(sentMs).plus(REPLAY_WINDOW).isBefore(brokerTime)) {
            replay("tombstone", id, sentMs == null ? null : Instant.ofEpochMilli(sentMs), brokerTime, now);
            return false;
        }
        Node listed = table.snapshot().node(id);
        String instance = text.substring(0, space);
        if (listed != null && listed.heartbeat().instance() != null && !listed.heartbeat().instance().equals(instance)) {
            stats.outcome(NodeTable.Outcome.STALE_INSTANCE);
            log.debug("Node {} tombstone of an earlier instance ignored: the node runs instance {} now", id,
                    listed.heartbeat().instance());
            return false;
        }
        return true;
    }

    private static Long parseLong(String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private void replay(String what, String nodeId, Instant sent, Instant brokerTime, Instant now) {
        stats.outcome(NodeTable.Outcome.REPLAYED);
        if (replayLoggedAt == null || !now.isBefore(replayLoggedAt.plus(LOG_EVERY))) {
            replayLoggedAt = now;
            log.warn("Node {} {} ignored as replayed: signed as sent at {}, stored by the broker at {} (a record "
                    + "written again, or the agent's clock that far behind; at most one such line a minute)",
                    printable(nodeId), what, sent, brokerTime);
        }
    }

    private void rejected(ConsumerRecord<byte[], byte[]> r, Rejection rejection, Instant now) {
        Rule rule = rejection.rule();
        stats.rejected(rule);
        Instant last = rejectionLoggedAt.get(rule);
        if (last != null && now.isBefore(last.plus(LOG_EVERY))) {
            rejectionsSinceLog.merge(rule, 1L, Long::sum);
            return;
        }
        long suppressed = rejectionsSinceLog.getOrDefault(rule, 0L);
        rejectionLoggedAt.put(rule, now);
        rejectionsSinceLog.put(rule, 0L);
        String key = r.key() == null ? "(none)" : new String(r.key(), StandardCharsets.UTF_8);
        log.warn("Node {} heartbeat rejected ({}); partition {} offset {}{}", printable(key), rejection,
                r.partition(), r.offset(), suppressed > 0 ? "; " + suppressed + " more like it in the last minute" : "");
    }

    /** A forged record's key is anyone's text: at most 128 characters, none of them a control character. */
    private static String printable(String s) {
        String cut = s.length() > 128 ? s.substring(0, 128) + "..." : s;
        return cut.replaceAll("\\p{Cntrl}", "?");
    }

    private static byte[] lastHeader(ConsumerRecord<byte[], byte[]> r, String name) {
        Header h = r.headers().lastHeader(name);
        return h == null ? null : h.value();
    }
}

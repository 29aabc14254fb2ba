package io.heartgate.scheduler.routing;

import io.heartgate.scheduler.time.Ticker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Which node made each response of OpenAI's Responses API that this scheduler relayed: vLLM keeps
 * a response's state in the memory of the process that made it, so a request continuing it
 * ({@code previous_response_id}) must go to that node, and any other answers 404. Bounded in
 * size (the oldest id goes first) and in time (an id is forgotten {@code ttl} after its answer).
 * Thread-safe; only requests to {@code /v1/responses} touch it.
 */
public final class ResponseHomes {

    /** The default bound: 100,000 ids, some 15 MiB. */
    public static final int DEFAULT_SIZE = 100_000;
    /** The default time an id is remembered. */
    public static final Duration DEFAULT_TTL = Duration.ofHours(6);
    /** The longest id kept; a longer one is no id a server made. */
    static final int MAX_ID_CHARS = 256;

    private record Home(String nodeId, long atNanos) {
    }

    private final int size;
    private final long ttlNanos;
    private final Ticker ticker;
    private final LinkedHashMap<String, Home> homes = new LinkedHashMap<>();
    private volatile Listener listener = Listener.NONE;

    /** Told of each response id noted here, for the other replicas. */
    @FunctionalInterface
    public interface Listener {
        /** Nobody listens: a replica on its own. */
        Listener NONE = (id, nodeId) -> { };

        /** Says that the node {@code nodeId} made the response {@code id}. */
        void placed(String id, String nodeId);
    }

    /**
     * Creates a memory of at most {@code size} ids, each kept {@code ttl}, timed by {@code ticker}.
     *
     * @throws IllegalArgumentException unless {@code size} and {@code ttl} are positive
     */
    public ResponseHomes(int size, Duration ttl, Ticker ticker) {
        if (size < 1 || ttl.isNegative() || ttl.isZero()) {
            throw new IllegalArgumentException("size and TTL must be positive: " + size + ", " + ttl);
        }
        this.size = size;
        this.ttlNanos = ttl.toNanos();
        this.ticker = ticker;
    }

    /** Sets who is told of each id noted; set once, when the replica is wired. */
    public void share(Listener to) {
        this.listener = to;
    }

    /** Returns how long an id is remembered. */
    public Duration ttl() {
        return Duration.ofNanos(ttlNanos);
    }

    /** Notes that the node {@code nodeId} made the response {@code id}, and tells the listener. */
    public void put(String id, String nodeId) {
        if (id.length() > MAX_ID_CHARS) {
            return;
        }
        remember(id, nodeId, ticker.nanos());
        listener.placed(id, nodeId);
    }

    /**
     * Takes an id another replica noted {@code ageNanos} ago, without telling it back; it is
     * remembered for what is left of its time to live.
     */
    public void adopt(String id, String nodeId, long ageNanos) {
        if (id.length() > MAX_ID_CHARS || ageNanos >= ttlNanos) {
            return;
        }
        remember(id, nodeId, ticker.nanos() - Math.max(0, ageNanos));
    }

    private synchronized void remember(String id, String nodeId, long atNanos) {
        homes.remove(id); // a re-put moves to the end: the oldest stays first
        homes.put(id, new Home(nodeId, atNanos));
        if (homes.size() > size) {
            Map.Entry<String, Home> eldest = homes.entrySet().iterator().next();
            homes.remove(eldest.getKey());
        }
    }

    /** Returns the id of the node that made the response {@code id}, or {@code null} when not known (any more). */
    public synchronized String node(String id) {
        Home h = homes.get(id);
        if (h == null) {
            return null;
        }
        if (ticker.nanos() - h.atNanos >= ttlNanos) {
            homes.remove(id);
            return null;
        }
        return h.nodeId;
    }

    /** Returns how many ids are remembered. */
    public synchronized int size() {
        return homes.size();
    }

    /**
     * Returns the response id that {@code body[0, length)}, the beginning of an answer of the
     * Responses API, starts with: the first {@code "id"} whose value starts with {@code resp_} (a
     * whole answer's own, or a stream's first event's {@code response.id}), or {@code null}.
     */
    public static String idIn(byte[] body, int length) {
        byte[] key = {'"', 'i', 'd', '"'};
        outer:
        for (int i = 0; i + key.length <= length; i++) {
            for (int k = 0; k < key.length; k++) {
                if (body[i + k] != key[k]) {
                    continue outer;
                }
            }
            int j = skipSpace(body, i + key.length, length);
            if (j >= length || body[j] != ':') {
                continue;
            }
            j = skipSpace(body, j + 1, length);
            if (j + 6 > length || body[j] != '"' || body[j + 1] != 'r' || body[j + 2] != 'e' || body[j + 3] != 's'
                    || body[j + 4] != 'p' || body[j + 5] != '_') {
                continue;
            }
            int end = j + 1;
            while (end < length && body[end] != '"' && body[end] != '\\' && end - j <= MAX_ID_CHARS) {
                end++;
            }
            if (end < length && body[end] == '"') {
                return new String(body, j + 1, end - j - 1, StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    private static int skipSpace(byte[] b, int i, int to) {
        while (i < to && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r')) {
            i++;
        }
        return i;
    }
}

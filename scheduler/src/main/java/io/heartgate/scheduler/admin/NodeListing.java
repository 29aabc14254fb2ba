package io.heartgate.scheduler.admin;

import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.vertx.core.Context;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpServerResponse;
import io.vertx.core.json.Json;
import java.time.Instant;
import java.util.List;

/**
 * Writes an unpaged {@code GET /admin/nodes} as it goes, a batch of nodes at a time, instead of
 * building one document of the whole fleet: between batches the event loop serves others, and the
 * next batch is encoded only once the last one is written to the client's socket. The listing is of one snapshot, taken
 * when it began. Confined to the admin port's event loop.
 */
final class NodeListing {

    /** Nodes encoded between two turns of the event loop. */
    static final int BATCH = 500;

    private final HttpServerResponse response;
    private final Context context;
    private final NodesView view;
    private final TableSnapshot snapshot;
    private final NodesView.Query query;
    private final Instant now;
    private int next;
    private boolean first = true;

    private NodeListing(HttpServerResponse response, Context context, NodesView view, TableSnapshot snapshot,
                        NodesView.Query query, Instant now) {
        this.response = response;
        this.context = context;
        this.view = view;
        this.snapshot = snapshot;
        this.query = query;
        this.now = now;
        this.next = NodesView.start(snapshot, query);
    }

    /** Starts writing {@code {"strategy": ..., "nodes": [...]}} of the nodes {@code query} keeps in {@code snapshot}. */
    static void write(HttpServerResponse response, Context context, NodesView view, TableSnapshot snapshot,
                      NodesView.Query query, Instant now, String strategy) {
        response.setChunked(true).putHeader("content-type", "application/json; charset=utf-8")
                .putHeader("cache-control", "no-store");
        response.write("{\"strategy\":" + Json.encode(strategy) + ",\"nodes\":[");
        new NodeListing(response, context, view, snapshot, query, now).batch();
    }

    private void batch() {
        if (response.closed()) {
            return; // the client left: nothing more to encode
        }
        try {
            next();
        } catch (RuntimeException e) {
            response.reset(); // the client sees a broken listing, never a clean end of a partial one
        }
    }

    private void next() {
        Buffer out = Buffer.buffer(64 * 1024);
        List<Node> nodes = snapshot.nodes();
        int written = 0;
        while (next < nodes.size() && written < BATCH && !NodesView.pastPrefix(snapshot, query, next)) {
            Node n = nodes.get(next++);
            if (view.matches(query, n)) {
                out.appendString(first ? "" : ",").appendString(view.node(n, now).encode());
                first = false;
                written++;
            }
        }
        if (next >= nodes.size() || NodesView.pastPrefix(snapshot, query, next)) {
            response.end(out.appendString("]}"));
            return;
        }
        // One batch in flight: the next is encoded once this one is written to the socket.
        response.write(out).onComplete(v -> context.runOnContext(w -> batch()));
    }
}

package io.heartgate.scheduler.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.NodeState;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.heartgate.scheduler.usage.TrafficView;
import io.vertx.core.MultiMap;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class NodesViewTest {

    /** Counts that tell the nodes apart: gpu-0007 has 7 requests and 1 error. */
    private static final TrafficView TRAFFIC = new TrafficView() {
        @Override
        public long requests(String nodeId) {
            return Long.parseLong(nodeId.substring(4));
        }

        @Override
        public long errors(String nodeId) {
            return requests(nodeId) / 5;
        }

        @Override
        public long totalRequests() {
            return 0;
        }

        @Override
        public double firstByteMedianMs() {
            return Double.NaN;
        }
    };

    private final NodesView view = new NodesView(EjectionView.NONE, 3, TRAFFIC);

    private static TableSnapshot fleet(int n) {
        List<Node> nodes = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            nodes.add(Node.of(Heartbeat.builder(String.format("gpu-%04d", i), "http://127.0.0.1:" + (20000 + i))
                    .state(i % 10 == 9 ? NodeState.DOWN : NodeState.UP)
                    .models(List.of(i % 2 == 0 ? "llama3:8b" : "qwen2.5:7b")).backend(i % 3 == 0 ? "vllm" : "ollama")
                    .build(), Instant.EPOCH, new InFlight()));
        }
        return new TableSnapshot(1, nodes);
    }

    private static NodesView.Query query(String... params) {
        MultiMap m = MultiMap.caseInsensitiveMultiMap();
        for (int i = 0; i < params.length; i += 2) {
            m.add(params[i], params[i + 1]);
        }
        return NodesView.Query.parse(m);
    }

    private List<String> walk(TableSnapshot s, String... params) {
        List<String> ids = new ArrayList<>();
        NodesView.Query q = query(params);
        for (int pages = 0; pages < 10_000; pages++) {
            NodesView.Page p = view.page(s, q);
            p.nodes().forEach(n -> ids.add(n.id()));
            if (p.cursor() == null) {
                return ids;
            }
            assertThat(p.nodes()).hasSize(q.limit());
            q = new NodesView.Query(q.states(), q.model(), q.routable(), q.prefix(), q.limit(),
                    query("limit", "1", "cursor", p.cursor()).after(), -1);
        }
        throw new AssertionError("no last page");
    }

    @Test
    void pagesFollowedByTheirCursorsGiveEveryNodeOnceInOrder() {
        TableSnapshot s = fleet(2003);
        List<String> all = s.nodes().stream().map(Node::id).toList();
        assertThat(walk(s, "limit", "500")).isEqualTo(all);
        assertThat(walk(s, "limit", "1")).isEqualTo(all);
        assertThat(walk(s, "limit", "2003")).isEqualTo(all);
        assertThat(view.page(s, query("limit", "2003")).cursor()).isNull(); // exactly the last node: no next page
        assertThat(view.page(s, query("limit", "2002")).cursor()).isNotNull();
    }

    @Test
    void filtersKeepOnlyTheirNodesAndPageThem() {
        TableSnapshot s = fleet(2000);
        List<String> llamaUp = s.nodes().stream().filter(n -> n.models().contains("llama3:8b:latest")
                || n.models().contains("llama3:8b")).filter(n -> n.state() == NodeState.UP).map(Node::id).toList();
        assertThat(walk(s, "limit", "77", "model", "llama3:8b", "routable", "true")).isEqualTo(llamaUp);
        assertThat(walk(s, "limit", "50", "state", "down")).hasSize(200).allMatch(id -> id.endsWith("9"));
        assertThat(walk(s, "limit", "10", "prefix", "gpu-01")).hasSize(100).allMatch(id -> id.startsWith("gpu-01"));
        assertThat(walk(s, "limit", "10", "prefix", "gpu-1999")).containsExactly("gpu-1999");
        assertThat(walk(s, "limit", "10", "prefix", "zzz")).isEmpty();
        assertThat(walk(s, "limit", "10", "state", "UP,DOWN", "routable", "false")).hasSize(200);
    }

    @Test
    void aCursorNamesANodeNotAPosition() {
        TableSnapshot before = fleet(100);
        NodesView.Page first = view.page(before, query("limit", "10"));
        List<Node> fewer = new ArrayList<>(before.nodes());
        fewer.remove(5); // a node of the first page left between the pages
        TableSnapshot after = new TableSnapshot(2, fewer);
        NodesView.Page second = view.page(after, query("limit", "10", "cursor", first.cursor()));
        assertThat(second.nodes().get(0).id()).isEqualTo("gpu-0010");
    }

    @Test
    void anOffsetSkipsMatchingNodesAndCountsThemAll() {
        TableSnapshot s = fleet(2000);
        NodesView.Page middle = view.page(s, query("limit", "3", "offset", "1000"));
        assertThat(middle.nodes()).extracting(Node::id).containsExactly("gpu-1000", "gpu-1001", "gpu-1002");
        assertThat(middle.total()).isEqualTo(2000);
        assertThat(middle.cursor()).isEqualTo(NodesView.cursor("gpu-1002"));
        // Offsets count matching nodes: the 11th DOWN node is gpu-0109.
        NodesView.Page down = view.page(s, query("limit", "2", "offset", "10", "state", "DOWN"));
        assertThat(down.nodes()).extracting(Node::id).containsExactly("gpu-0109", "gpu-0119");
        assertThat(down.total()).isEqualTo(200);
        NodesView.Page prefixed = view.page(s, query("limit", "50", "offset", "95", "prefix", "gpu-01"));
        assertThat(prefixed.nodes()).extracting(Node::id).containsExactly("gpu-0195", "gpu-0196", "gpu-0197",
                "gpu-0198", "gpu-0199");
        assertThat(prefixed.total()).isEqualTo(100);
        assertThat(prefixed.cursor()).isNull();
        NodesView.Page past = view.page(s, query("limit", "5", "offset", "5000"));
        assertThat(past.nodes()).isEmpty();
        assertThat(past.total()).isEqualTo(2000);
        assertThat(past.cursor()).isNull();
        assertThat(view.page(s, query("limit", "5")).total()).isEqualTo(-1); // no offset: nothing counted
    }

    @Test
    void aNodeShowsWhatWasRelayedToIt() {
        Node n = fleet(8).nodes().get(7);
        var json = view.node(n, Instant.EPOCH);
        assertThat(json.getLong("requests")).isEqualTo(7);
        assertThat(json.getLong("errors")).isEqualTo(1);
    }

    @Test
    void summaryCountsByStateModelAndBackend() {
        var summary = view.summary(fleet(30));
        assertThat(summary.getInteger("nodes")).isEqualTo(30);
        assertThat(summary.getInteger("routable")).isEqualTo(27);
        assertThat(summary.getJsonObject("byState").getMap()).containsEntry("UP", 27).containsEntry("DOWN", 3);
        assertThat(summary.getJsonObject("byBackend").getMap()).containsEntry("vllm", 10).containsEntry("ollama", 20);
        assertThat(summary.getJsonObject("byModel").getMap()).hasSize(2).containsValues(15, 15);
    }

    @Test
    void badParametersAreRefusedByName() {
        assertThatThrownBy(() -> query("limit", "0")).hasMessageStartingWith("limit:");
        assertThatThrownBy(() -> query("limit", "10001")).hasMessageStartingWith("limit:");
        assertThatThrownBy(() -> query("limit", "ten")).hasMessageStartingWith("limit:");
        assertThatThrownBy(() -> query("state", "UP,BUSY")).hasMessageStartingWith("state:");
        assertThatThrownBy(() -> query("routable", "yes")).hasMessageStartingWith("routable:");
        assertThatThrownBy(() -> query("limit", "5", "cursor", "!!")).hasMessageStartingWith("cursor:");
        assertThatThrownBy(() -> query("cursor", NodesView.cursor("gpu-1"))).hasMessageStartingWith("cursor:");
        assertThatThrownBy(() -> query("offset", "5")).hasMessageStartingWith("offset:");
        assertThatThrownBy(() -> query("limit", "5", "offset", "-1")).hasMessageStartingWith("offset:");
        assertThatThrownBy(() -> query("limit", "5", "offset", "x")).hasMessageStartingWith("offset:");
        assertThatThrownBy(() -> query("limit", "5", "offset", "0", "cursor", NodesView.cursor("gpu-1")))
                .hasMessageStartingWith("offset:");
        assertThat(NodesView.Query.parse(MultiMap.caseInsensitiveMultiMap())).isEqualTo(NodesView.Query.ALL);
    }
}

package io.heartgate.scheduler.routing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.Gpu;
import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.InvalidSettingException;
import io.heartgate.protocol.Load;
import io.heartgate.protocol.LoadedModel;
import io.heartgate.protocol.ModelInfo;
import io.heartgate.scheduler.balancer.Strategy;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.status.EjectionView;
import io.heartgate.scheduler.status.Ramp;
import io.heartgate.scheduler.table.InFlight;
import io.heartgate.scheduler.table.ModelNames;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Warm-first on plain snapshots: which candidates are left for the strategy, and what it then picks. */
class WarmFirstTest {

    private static final Instant NOW = Instant.parse("2026-12-01T10:00:00Z");
    private static final String LLAMA = ModelNames.normalize("llama3:8b");
    private static final List<String> MODELS = List.of("llama3:8b", "qwen2.5:7b");
    private static final WarmFirst ON = new WarmFirst(true, 4);

    private static Heartbeat.Builder ollama(String id, String... loaded) {
        List<LoadedModel> inMemory = new ArrayList<>();
        for (String m : loaded) {
            inMemory.add(new LoadedModel(m, 4_661_224_676L, 4_661_224_676L, null, 4096));
        }
        return Heartbeat.builder(id, "http://" + id + ":11434").instance("i1").seq(1L).intervalMs(1000)
                .backend("ollama").models(MODELS).loaded(inMemory);
    }

    private static Node node(Heartbeat.Builder hb) {
        return Node.of(hb.build(), NOW, new InFlight());
    }

    private static Node busy(Node n, int inFlight) {
        for (int i = 0; i < inFlight; i++) {
            n.inFlight().increment();
        }
        return n;
    }

    private static List<String> ids(List<Node> nodes) {
        return nodes.stream().map(Node::id).toList();
    }

    /** Picks {@code times} times with round robin behind {@code warm}, as the proxy does. */
    private static List<String> picks(WarmFirst warm, int times, Node... nodes) {
        RouteSelector selector = new RouteSelector(Strategy.ROUND_ROBIN.create(() -> 0L, 0), Ramp.NONE, () -> 0.0,
                warm, Clock.fixed(NOW, ZoneOffset.UTC));
        TableSnapshot table = new TableSnapshot(1, List.of(nodes));
        List<String> out = new ArrayList<>();
        for (int i = 0; i < times; i++) {
            Route.To r = (Route.To) selector.select(table, RequestFacts.ofModel(LLAMA), List.of(), EjectionView.NONE);
            out.add(r.node().id());
            r.lease().release(); // one request after another
        }
        return out;
    }

    @Test
    void theNodeWithTheModelLoadedTakesEveryRequestForIt() {
        Node a = node(ollama("gpu-a", "qwen2.5:7b"));
        Node b = node(ollama("gpu-b", "llama3:8b"));
        Node c = node(ollama("gpu-c"));

        assertThat(picks(ON, 6, a, b, c)).containsOnly("gpu-b");
        assertThat(picks(WarmFirst.OFF, 6, a, b, c)).containsExactly("gpu-a", "gpu-b", "gpu-c", "gpu-a", "gpu-b", "gpu-c");
        assertThat(ON.prefer(List.of(a, b, c), ModelNames.normalize("qwen2.5:7b"))).containsExactly(a);
    }

    @Test
    void theLoadCapSendsWorkToAColdNodeOnceEveryWarmOneIsMoreThanNBusier() {
        Node a = busy(node(ollama("gpu-a")), 1);
        Node b = busy(node(ollama("gpu-b", "llama3:8b")), 5);
        Node c = busy(node(ollama("gpu-c")), 2);

        assertThat(ids(ON.prefer(List.of(a, b, c), LLAMA))).as("5 is not more than 1 + 4").containsExactly("gpu-b");
        b.inFlight().increment();
        assertThat(ids(ON.prefer(List.of(a, b, c), LLAMA))).as("6 is").containsExactly("gpu-a", "gpu-b", "gpu-c");
        assertThat(ids(new WarmFirst(true, 5).prefer(List.of(a, b, c), LLAMA))).containsExactly("gpu-b");
    }

    @Test
    void theLoadCapCountsWhatTheNodesReportInFlightAndQueued() {
        Node a = node(ollama("gpu-a"));
        Node b = node(ollama("gpu-b", "llama3:8b").load(new Load(3, 2, null)));
        Node warmToo = busy(node(ollama("gpu-c", "llama3:8b")), 4);

        assertThat(ids(ON.prefer(List.of(a, b), LLAMA))).as("3 + 2 queued > 0 + 4").containsExactly("gpu-a", "gpu-b");
        assertThat(ids(ON.prefer(List.of(a, b, warmToo), LLAMA))).as("the least busy warm node is within the cap")
                .containsExactly("gpu-b", "gpu-c");
    }

    @Test
    void withNoNodeWarmTheStrategyChoosesAsItWouldWithoutWarmFirst() {
        Node a = node(ollama("gpu-a", "qwen2.5:7b"));
        Node b = node(ollama("gpu-b", "qwen2.5:7b"));
        Node c = node(ollama("gpu-c", "qwen2.5:7b"));

        assertThat(picks(ON, 7, a, b, c)).isEqualTo(picks(WarmFirst.OFF, 7, a, b, c))
                .containsExactly("gpu-a", "gpu-b", "gpu-c", "gpu-a", "gpu-b", "gpu-c", "gpu-a");
        List<Node> all = List.of(a, b, c);
        assertThat(ON.prefer(all, LLAMA)).isSameAs(all);
    }

    @Test
    void everyCandidateWarmOrNoModelOrOneCandidateLeavesTheListAsItIs() {
        List<Node> all = List.of(node(ollama("gpu-a", "llama3:8b")), node(ollama("gpu-b", "llama3:8b")));
        List<Node> one = List.of(node(ollama("gpu-c")));

        assertThat(ON.prefer(all, LLAMA)).isSameAs(all);
        assertThat(ON.prefer(all, null)).isSameAs(all);
        assertThat(ON.prefer(one, LLAMA)).isSameAs(one);
        assertThat(WarmFirst.OFF.prefer(List.of(all.get(0), one.get(0)), LLAMA)).hasSize(2);
    }

    @Test
    void serversThatHoldTheirModelsAllTheTimeCountAsWarm() {
        Node vllm = Node.of(Heartbeat.builder("gpu-v", "http://gpu-v:8000").intervalMs(1000).backend("vllm")
                .models(List.of("llama3:8b")).build(), NOW, new InFlight());
        Node unknownBackend = Node.of(Heartbeat.builder("gpu-u", "http://gpu-u:8000").intervalMs(1000)
                .models(List.of("llama3:8b")).build(), NOW, new InFlight());
        Node coldOllama = node(ollama("gpu-o"));

        assertThat(ids(ON.prefer(List.of(coldOllama, unknownBackend, vllm), LLAMA))).containsExactly("gpu-u", "gpu-v");
        assertThat(vllm.holdsInMemory(ModelNames.normalize("qwen2.5:7b"))).as("not served at all").isFalse();
    }

    @Test
    void aNodeThatJustAnsweredForTheModelIsWarmUntilAHeartbeatTwoIntervalsLaterSaysOtherwise() {
        Node a = node(ollama("gpu-a"));
        Node b = node(ollama("gpu-b"));
        RouteSelector selector = new RouteSelector(Strategy.ROUND_ROBIN.create(() -> 0L, 0), Ramp.NONE, () -> 0.0,
                ON, Clock.fixed(NOW.plusMillis(300), ZoneOffset.UTC));

        selector.answered(b, RequestFacts.ofModel(LLAMA));

        assertThat(ids(ON.prefer(List.of(a, b), LLAMA))).containsExactly("gpu-b");
        Node probedBeforeTheAnswer = Node.of(b.heartbeat(), NOW.plusMillis(900), b.inFlight());
        assertThat(ids(ON.prefer(List.of(a, probedBeforeTheAnswer), LLAMA))).containsExactly("gpu-b");
        Node maybeResent = Node.of(b.heartbeat(), NOW.plusMillis(2_300), b.inFlight());
        assertThat(ids(ON.prefer(List.of(a, maybeResent), LLAMA))).as("a late probe's heartbeat sent again")
                .containsExactly("gpu-b");
        Node probedAfter = Node.of(b.heartbeat(), NOW.plusMillis(2_301), b.inFlight());
        assertThat(ids(ON.prefer(List.of(a, probedAfter), LLAMA))).as("its heartbeat decides again")
                .containsExactly("gpu-a", "gpu-b");
        Node reportsIt = Node.of(ollama("gpu-b", "llama3:8b").build(), NOW.plusMillis(2_301), b.inFlight());
        assertThat(ids(ON.prefer(List.of(a, reportsIt), LLAMA))).containsExactly("gpu-b");
    }

    @Test
    void theNarrowedListIsReusedWhileItHoldsTheSameNodes() {
        Node a = node(ollama("gpu-a", "qwen2.5:7b"));
        Node b = node(ollama("gpu-b", "llama3:8b"));
        Node c = node(ollama("gpu-c", "llama3:8b"));
        List<Node> all = List.of(a, b, c);

        List<Node> first = ON.prefer(all, LLAMA, null);
        assertThat(ids(first)).containsExactly("gpu-b", "gpu-c");
        assertThat(ON.prefer(all, LLAMA, first)).isSameAs(first);
        assertThat(ON.prefer(all, LLAMA, List.of(b))).containsExactly(b, c);
        a.inFlight().loading(LLAMA, 1);
        assertThat(ON.prefer(all, LLAMA, first)).isSameAs(all).as("all warm now");
    }

    @Test
    void aSnapshotKnowsTheModelsEveryServingNodeHolds() {
        TableSnapshot t = new TableSnapshot(1, List.of(node(ollama("gpu-a", "llama3:8b")),
                node(ollama("gpu-b", "llama3:8b", "qwen2.5:7b"))));

        assertThat(t.heldEverywhere(LLAMA)).isTrue();
        assertThat(t.heldEverywhere(ModelNames.normalize("qwen2.5:7b"))).isFalse();
        assertThat(t.heldEverywhere(ModelNames.normalize("phi3:mini"))).isFalse();
    }

    @Test
    void answersAreNotedOnlyWithWarmFirstOnAndForModelsNotReportedLoaded() {
        Node a = node(ollama("gpu-a"));
        Node loaded = node(ollama("gpu-b", "llama3:8b"));
        Clock clock = Clock.fixed(NOW, ZoneOffset.UTC);

        new RouteSelector(Strategy.ROUND_ROBIN.create(), Ramp.NONE, () -> 0.0, WarmFirst.OFF, clock)
                .answered(a, RequestFacts.ofModel(LLAMA));
        new RouteSelector(Strategy.ROUND_ROBIN.create(), Ramp.NONE, () -> 0.0, ON, clock)
                .answered(loaded, RequestFacts.ofModel(LLAMA));

        assertThat(a.inFlight().servedAtMs(LLAMA)).isEqualTo(Long.MIN_VALUE);
        assertThat(loaded.inFlight().servedAtMs(LLAMA)).isEqualTo(Long.MIN_VALUE);
    }

    @Test
    void amongColdNodesThoseWithFreeGpuMemoryForTheModelArePreferred() {
        ModelInfo size = new ModelInfo("llama3:8b", 4_661_224_676L, null, null, null);
        Node small = node(ollama("gpu-a").modelInfo(List.of(size))
                .gpus(List.of(new Gpu("NVIDIA L4", 0.5, 20_000L, 23_034L)))); // 3 GiB free
        Node roomy = node(ollama("gpu-b").modelInfo(List.of(size))
                .gpus(List.of(new Gpu("NVIDIA L4", 0.1, 2_000L, 23_034L), new Gpu("NVIDIA L4", null, null, null))));
        Node silent = node(ollama("gpu-c", "qwen2.5:7b"));

        assertThat(ids(ON.prefer(List.of(small, roomy, silent), LLAMA))).containsExactly("gpu-b");
        assertThat(ids(ON.prefer(List.of(small, silent), LLAMA))).as("none has room: all stay")
                .containsExactly("gpu-a", "gpu-c");
        assertThat(roomy.freeGpuMemoryMiB()).isEqualTo(21_034L);
        assertThat(silent.freeGpuMemoryMiB()).isEqualTo(-1L);
    }

    @Test
    void withoutGpuFiguresANodeHoldingNoModelHasRoomUntilItIsSentOneToLoad() {
        Node busyWithQwen = node(ollama("gpu-a", "qwen2.5:7b"));
        Node empty = node(ollama("gpu-b"));
        Node alsoEmpty = node(ollama("gpu-c"));

        assertThat(ids(ON.prefer(List.of(busyWithQwen, empty, alsoEmpty), LLAMA))).containsExactly("gpu-b", "gpu-c");
        empty.inFlight().loading(ModelNames.normalize("mistral:7b"), 1);
        assertThat(ids(ON.prefer(List.of(busyWithQwen, empty, alsoEmpty), LLAMA))).containsExactly("gpu-c");
        alsoEmpty.inFlight().served(ModelNames.normalize("phi3:mini"), NOW.toEpochMilli());
        assertThat(ids(ON.prefer(List.of(busyWithQwen, empty, alsoEmpty), LLAMA))).as("none has room any more")
                .containsExactly("gpu-a", "gpu-b", "gpu-c");
    }

    @Test
    void aNodeLoadingTheModelForRequestsInFlightIsWarmForItUntilTheyEnd() {
        Node a = node(ollama("gpu-a", "qwen2.5:7b"));
        Node b = node(ollama("gpu-b", "qwen2.5:7b"));
        RouteSelector selector = new RouteSelector(Strategy.ROUND_ROBIN.create(() -> 0L, 0), Ramp.NONE, () -> 0.0,
                ON, Clock.fixed(NOW, ZoneOffset.UTC));
        assertThat(selector.loadingFor(b, RequestFacts.ofModel(LLAMA))).isEqualTo(LLAMA);
        assertThat(selector.loadingFor(b, RequestFacts.ofModel(ModelNames.normalize("qwen2.5:7b")))).isNull();

        b.inFlight().loading(LLAMA, 1);
        b.inFlight().loading(LLAMA, 1);
        assertThat(ids(ON.prefer(List.of(a, b), LLAMA))).containsExactly("gpu-b");
        b.inFlight().loading(LLAMA, -1);
        assertThat(ids(ON.prefer(List.of(a, b), LLAMA))).containsExactly("gpu-b");
        b.inFlight().loading(LLAMA, -1);
        assertThat(ids(ON.prefer(List.of(a, b), LLAMA))).containsExactly("gpu-a", "gpu-b");
        assertThat(b.inFlight().loadingAny()).isFalse();
        assertThat(new RouteSelector(Strategy.ROUND_ROBIN.create(), Ramp.NONE, () -> 0.0, WarmFirst.OFF,
                Clock.fixed(NOW, ZoneOffset.UTC)).loadingFor(b, RequestFacts.ofModel(LLAMA))).isNull();
    }

    @Test
    void rejectsANegativeCap() {
        assertThatThrownBy(() -> new WarmFirst(true, -1)).isInstanceOf(InvalidSettingException.class)
                .hasMessageContaining("warmMaxLoad");
    }
}

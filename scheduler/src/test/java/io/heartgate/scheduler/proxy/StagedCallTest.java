package io.heartgate.scheduler.proxy;

import static io.heartgate.scheduler.proxy.EmbeddedRelay.CHAT;
import static io.heartgate.scheduler.proxy.EmbeddedRelay.post;
import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.scheduler.proxy.ProxyCounters.Counter;
import io.heartgate.scheduler.proxy.stage.Answer;
import io.heartgate.scheduler.proxy.stage.Call;
import io.heartgate.scheduler.proxy.stage.Stage;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.request.RequestFacts;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Stages ahead of routing: one that holds requests (as a queue will) and one that answers itself. */
class StagedCallTest {

    /** Holds every call until the test lets it go; wants the stream flag read. */
    private static final class Holding implements Stage {
        final List<Call> held = new ArrayList<>();

        @Override
        public void handle(Call call) {
            held.add(call);
        }

        @Override
        public Set<RequestFacts.Field> reads() {
            return Set.of(RequestFacts.Field.STREAM);
        }
    }

    private final Holding holding = new Holding();
    private EmbeddedRelay relay;

    @AfterEach
    void tearDown() {
        relay.close();
    }

    @Test
    void aHeldCallGoesOnLaterWithWhatTheStagesLearned() {
        relay = new EmbeddedRelay(List.of(holding), "n1");
        relay.client.writeInbound(post("/v1/chat/completions", "{\"model\":\"llama3:8b\",\"stream\":true}"));
        assertThat(relay.connections("n1")).isZero();

        Call call = holding.held.get(0);
        assertThat(call.facts().withPromptBytes(0)).isEqualTo(new RequestFacts("llama3:8b", true, null, null));
        assertThat(call.method()).isEqualTo("POST");
        assertThat(call.uri()).isEqualTo("/v1/chat/completions");
        call.facts(call.facts().withCaller("team-a"));
        call.headers().set("x-caller", "team-a");
        call.proceed();

        FullHttpRequest sent = relay.upstream("n1").readOutbound();
        assertThat(sent.headers().get("x-caller")).isEqualTo("team-a");
        sent.release();
    }

    @Test
    void aStageAnswerIsWrittenCountedByTypeAndTheConnectionServesTheNextRequest() {
        relay = new EmbeddedRelay(List.of(holding), "n1");
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        holding.held.get(0).answer(Answer.error(ErrorType.NO_UPSTREAM, "held, then refused"));

        HttpResponse r = relay.client.readOutbound();
        assertThat(r.status().code()).isEqualTo(503);
        ReferenceCountUtil.release(r);
        assertThat(relay.counters.errors(ErrorType.NO_UPSTREAM)).isEqualTo(1);
        assertThat(relay.client.isActive()).isTrue();

        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        assertThat(holding.held).hasSize(2);
        holding.held.get(1).proceed();
        assertThat(relay.connections("n1")).isEqualTo(1);
    }

    @Test
    void aCallWhoseClientLeftIgnoresALateAnswerOrProceed() {
        relay = new EmbeddedRelay(List.of(holding), "n1");
        relay.client.writeInbound(post("/v1/chat/completions", CHAT));
        Call call = holding.held.get(0);

        relay.client.close();

        assertThat(call.ended()).isTrue();
        call.answer(Answer.error(ErrorType.NO_UPSTREAM, "too late"));
        call.proceed();
        assertThat(relay.connections("n1")).isZero();
        assertThat(relay.counters.errors(ErrorType.NO_UPSTREAM)).isZero();
        assertThat(relay.counters.get(Counter.REQUESTS)).isEqualTo(1);
    }
}

package io.heartgate.loadgen;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Answers each request with a script of timed steps played on a {@link ManualClockwork}, and keeps
 * every request sent. A cancelled request plays no further steps.
 */
final class ScriptedTransport implements Transport {

    /** One step: after {@code delayMs} from the send, do {@code action} to the listener. */
    record Step(long delayMs, Consumer<Listener> action) {
    }

    final List<Outgoing> sent = new ArrayList<>();
    int cancelled;
    private final ManualClockwork clock;
    private final Function<Outgoing, List<Step>> script;
    private long sendCostNanos;

    ScriptedTransport(ManualClockwork clock, Function<Outgoing, List<Step>> script) {
        this.clock = clock;
        this.script = script;
    }

    /** Makes the next send take {@code nanos} of the caller's time, as a stalled generator would. */
    void stallNextSend(long nanos) {
        sendCostNanos = nanos;
    }

    @Override
    public Call send(Outgoing request, Listener listener) {
        sent.add(request);
        clock.advance(sendCostNanos);
        sendCostNanos = 0;
        long at = clock.nanos();
        boolean[] stopped = {false};
        for (Step step : script.apply(request)) {
            clock.schedule(at + step.delayMs() * 1_000_000, () -> {
                if (!stopped[0]) {
                    step.action().accept(listener);
                }
            });
        }
        return () -> {
            if (!stopped[0]) {
                stopped[0] = true;
                cancelled++;
            }
        };
    }

    /** Returns an Ollama answer: status 200, {@code chunks} tokens from {@code firstMs}, 10 ms apart, done at {@code endMs}. */
    static List<Step> ollama(long firstMs, int chunks, long endMs, long loadNanos) {
        List<Step> steps = new ArrayList<>();
        steps.add(new Step(0, l -> l.headers(200)));
        for (int i = 0; i < chunks; i++) {
            String line = "{\"message\":{\"role\":\"assistant\",\"content\":\" w" + i + "\"},\"done\":false}";
            steps.add(new Step(firstMs + 10L * i, l -> l.line(line)));
        }
        String last = "{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"load_duration\":" + loadNanos
                + ",\"prompt_eval_count\":9}";
        steps.add(new Step(endMs, l -> l.line(last)));
        steps.add(new Step(endMs, Listener::complete));
        return steps;
    }
}

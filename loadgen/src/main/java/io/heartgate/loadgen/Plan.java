package io.heartgate.loadgen;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Lists a run's conversations before it starts: when each begins, which model it asks and with which
 * key. The same configuration always gives the same plan. Immutable and thread-safe.
 *
 * @param conversations in start order
 */
public record Plan(List<Conversation> conversations) {

    /**
     * One planned conversation.
     *
     * @param index its number, from 0, in start order
     * @param startNanos its first request's scheduled time, from the run's start
     * @param model the model every turn asks
     * @param keyIndex the index of its key in the configuration's keys, or -1 for no key
     */
    public record Conversation(int index, long startNanos, String model, int keyIndex) {
    }

    /** Makes an immutable copy. */
    public Plan {
        conversations = List.copyOf(conversations);
    }

    /** Plans {@code config}: start times from its schedule, models drawn from its mix, keys round robin. */
    public static Plan of(LoadConfig config) {
        long[] starts = Schedule.arrivals(config.arrivals(), config.conversationRate(), config.duration(), config.seed());
        // Its own stream, so that changing --arrivals does not change which models are drawn.
        SplittableRandom models = new SplittableRandom(config.seed() ^ 0x5DEECE66DL);
        List<Conversation> out = new ArrayList<>(starts.length);
        int keys = config.keys().size();
        for (int i = 0; i < starts.length; i++) {
            out.add(new Conversation(i, starts[i], config.mix().draw(models), keys == 0 ? -1 : i % keys));
        }
        return new Plan(out);
    }

    /** Returns the requests the plan asks for: conversations times turns. */
    public long requests(int turns) {
        return (long) conversations.size() * turns;
    }
}

package io.heartgate.loadgen;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Plays a {@link Plan} against a server, open loop: each conversation's first request leaves at its
 * planned time whatever earlier requests are doing, and every time is measured from the scheduled
 * start, so a slow server cannot slow the generator down and hide its own latency (no coordinated
 * omission). A conversation's next turn leaves a think time after the previous answer ended and is
 * measured from then. Arrivals beyond the in-flight limit are dropped and counted, never queued.
 *
 * <p>The run ends when every conversation is over, or at {@code duration + timeout}: what is still
 * under way then is timed out, and turns not yet sent are skipped. One run per instance.
 */
public final class Runner {

    private static final Logger log = LoggerFactory.getLogger(Runner.class);

    /**
     * Holds what a run produced.
     *
     * @param samples one per request sent or dropped, ordered by scheduled start
     * @param scheduled the requests the plan asked for
     * @param elapsedNanos from the start to the last answer or the final deadline
     */
    public record Result(List<Sample> samples, long scheduled, long elapsedNanos) {
    }

    private final LoadConfig config;
    private final Transport transport;
    private final Clockwork clock;
    private final ObjectMapper json = new ObjectMapper();
    private final URI target;
    private final List<String> keyLabels;
    private final ConcurrentLinkedQueue<Sample> samples = new ConcurrentLinkedQueue<>();
    private final Set<Exchange> open = ConcurrentHashMap.newKeySet();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final Object lifecycle = new Object();
    private boolean closed; // guarded by lifecycle
    private AtomicInteger remaining;
    private CountDownLatch allDone;
    private long start;
    private boolean started;

    /** Creates a runner; nothing is sent before {@link #run}. */
    public Runner(LoadConfig config, Transport transport, Clockwork clock) {
        this.config = config;
        this.transport = transport;
        this.clock = clock;
        String base = config.url().toString().replaceAll("/+$", "");
        this.target = URI.create(base + config.api().path());
        this.keyLabels = Keys.labels(config.keys());
    }

    /** Runs {@code plan} to its end on the calling thread and returns every request's sample. */
    public Result run(Plan plan) throws InterruptedException {
        if (started) {
            throw new IllegalStateException("a runner runs once");
        }
        started = true;
        List<Plan.Conversation> conversations = plan.conversations();
        remaining = new AtomicInteger(conversations.size());
        allDone = new CountDownLatch(conversations.isEmpty() ? 0 : 1);
        start = clock.nanos();
        long hardEnd = start + config.duration().toNanos() + config.timeout().toNanos();
        log.info("Sending {} conversations of {} turns to {} over {} ms", conversations.size(), config.turns(), target,
                config.duration().toMillis());
        for (Plan.Conversation c : conversations) {
            long at = start + c.startNanos();
            clock.sleepUntil(at);
            begin(new Dialogue(c, config.sessions().system(config.seed(), c.index())), 1, at);
        }
        clock.await(allDone, hardEnd);
        List<Exchange> late;
        synchronized (lifecycle) {
            closed = true;
            late = new ArrayList<>(open);
        }
        late.forEach(Exchange::timeout);
        awaitRecorded();
        long elapsed = Math.min(clock.nanos(), hardEnd) - start;
        List<Sample> out = new ArrayList<>(samples);
        out.sort(Comparator.comparingDouble(Sample::scheduledMs)
                .thenComparingInt(Sample::conversation).thenComparingInt(Sample::turn));
        return new Result(out, plan.requests(config.turns()), elapsed);
    }

    private void begin(Dialogue d, int turn, long scheduled) {
        String user = config.userMessage(d.plan.index(), turn);
        List<Message> messages = d.ask(user);
        String key = d.plan.keyIndex() < 0 ? null : config.keys().get(d.plan.keyIndex());
        String label = d.plan.keyIndex() < 0 ? null : keyLabels.get(d.plan.keyIndex());
        int chars = messages.stream().mapToInt(m -> m.content().length()).sum();
        String session = config.sessions().session(config.seed(), d.plan.index());
        Exchange x = new Exchange(d, turn, user, label, session, scheduled, chars);
        synchronized (lifecycle) {
            if (closed) {
                conversationOver();
                return;
            }
            if (inFlight.incrementAndGet() > config.maxInFlight()) {
                inFlight.decrementAndGet();
                samples.add(x.sample(Outcome.DROPPED, -1));
                conversationOver();
                return;
            }
            open.add(x);
        }
        String body = config.api().body(json, d.plan.model(), messages, config.tokensFor(d.plan.index(), turn));
        x.call = transport.send(new Transport.Outgoing(target, body, key, config.timeout(),
                config.sessions().headers(config.seed(), d.plan.index())), x);
        clock.schedule(scheduled + config.timeout().toNanos(), x::timeout);
    }

    /**
     * Waits, at most a second, for exchanges that other threads were ending at the deadline to record
     * their samples: an exchange leaves {@code open} only after its sample is added.
     */
    private void awaitRecorded() {
        long giveUp = System.nanoTime() + 1_000_000_000L;
        while (!open.isEmpty() && System.nanoTime() < giveUp) {
            LockSupport.parkNanos(1_000_000);
        }
        if (!open.isEmpty()) {
            log.warn("{} requests were still being recorded at the end; they count as skipped", open.size());
        }
    }

    private void conversationOver() {
        if (remaining.decrementAndGet() == 0) {
            allDone.countDown();
        }
    }

    /** Ends one exchange: records it, then starts the next turn or closes the conversation. */
    private void finished(Exchange x, Sample sample, String answer) {
        samples.add(sample);
        open.remove(x);
        inFlight.decrementAndGet();
        if (sample.ok() && x.turn < config.turns()) {
            x.dialogue.answered(x.user, answer);
            long next = clock.nanos() + config.thinkTime().toNanos();
            clock.schedule(next, () -> begin(x.dialogue, x.turn + 1, next));
        } else {
            conversationOver();
        }
    }

    /**
     * Keeps one conversation's history: the user messages and the answers received, so each turn's
     * prompt is longer than the last. Touched by one exchange at a time, each turn starting after
     * the previous one ended.
     */
    private static final class Dialogue {
        final Plan.Conversation plan;
        private final List<Message> history = new ArrayList<>();

        Dialogue(Plan.Conversation plan, String system) {
            this.plan = plan;
            if (system != null) {
                history.add(new Message("system", system));
            }
        }

        synchronized List<Message> ask(String user) {
            List<Message> m = new ArrayList<>(history);
            m.add(new Message("user", user));
            return m;
        }

        synchronized void answered(String user, String answer) {
            history.add(new Message("user", user));
            history.add(new Message("assistant", answer));
        }
    }

    /** One request under way: reads its stream and ends exactly once, by answer, failure or timeout. */
    private final class Exchange implements Transport.Listener {
        final Dialogue dialogue;
        final int turn;
        final String user;
        private final String keyLabel;
        private final String session;
        private final long scheduled;
        private final int promptChars;
        private final StringBuilder answer = new StringBuilder();
        volatile Transport.Call call;
        private boolean ended;
        private int status;
        private String node;
        private String affinity;
        private long firstNanos = -1;
        private int tokens;
        private boolean done;
        private long loadNanos = -1;
        private int promptTokens = -1;
        private String error;

        Exchange(Dialogue dialogue, int turn, String user, String keyLabel, String session, long scheduled,
                 int promptChars) {
            this.dialogue = dialogue;
            this.turn = turn;
            this.user = user;
            this.keyLabel = keyLabel;
            this.session = session;
            this.scheduled = scheduled;
            this.promptChars = promptChars;
        }

        @Override
        public synchronized void headers(int code) {
            status = code;
        }

        @Override
        public synchronized void upstream(String node) {
            this.node = node;
        }

        @Override
        public synchronized void affinity(String placement) {
            this.affinity = placement;
        }

        @Override
        public synchronized void line(String line) {
            if (ended) {
                return;
            }
            StreamEvent e = config.api().read(line);
            if (e.hasContent()) {
                if (firstNanos < 0) {
                    firstNanos = clock.nanos();
                }
                tokens++;
                answer.append(e.content());
            }
            if (e.error() != null && error == null) {
                error = e.error();
            }
            if (e.loadNanos() >= 0) {
                loadNanos = e.loadNanos();
            }
            if (e.promptTokens() >= 0) {
                promptTokens = e.promptTokens();
            }
            done |= e.done();
            if (status != 200 && error == null && !line.isBlank()) {
                error = line.length() > 200 ? line.substring(0, 200) : line;
            }
        }

        @Override
        public void complete() {
            Outcome o;
            synchronized (this) {
                o = status != 200 ? Outcome.HTTP_ERROR : error != null ? Outcome.STREAM_ERROR
                        : done ? Outcome.OK : Outcome.CUT;
            }
            end(o, null);
        }

        @Override
        public void failed(Throwable t) {
            Outcome o;
            synchronized (this) {
                // A connection that breaks after the end marker still delivered the whole answer.
                o = status == 0 ? Failures.classify(t) : status != 200 ? Outcome.HTTP_ERROR
                        : done && error == null ? Outcome.OK : Outcome.CUT;
            }
            end(o, Failures.message(t));
        }

        void timeout() {
            if (end(Outcome.TIMEOUT, "no complete answer within " + config.timeout().toMillis() + " ms")) {
                Transport.Call c = call;
                if (c != null) {
                    c.cancel();
                }
            }
        }

        /** Ends the exchange unless it already ended; returns whether this call ended it. */
        private boolean end(Outcome outcome, String reason) {
            Sample s;
            String text;
            synchronized (this) {
                if (ended) {
                    return false;
                }
                ended = true;
                if (error == null) {
                    error = reason;
                }
                s = sample(outcome, (clock.nanos() - scheduled) / 1e6);
                text = answer.toString();
            }
            finished(this, s, text);
            return true;
        }

        Sample sample(Outcome outcome, double totalMs) {
            double ttft = firstNanos < 0 ? -1 : Percentiles.round((firstNanos - scheduled) / 1e6);
            return new Sample(dialogue.plan.index(), turn, dialogue.plan.model(), keyLabel,
                    Percentiles.round((scheduled - start) / 1e6), outcome, status, ttft,
                    totalMs < 0 ? totalMs : Percentiles.round(totalMs), tokens, loadNanos, promptTokens, promptChars,
                    node, outcome == Outcome.OK ? null : error, affinity, session);
        }
    }
}

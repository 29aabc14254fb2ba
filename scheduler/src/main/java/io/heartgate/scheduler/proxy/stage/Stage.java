package io.heartgate.scheduler.proxy.stage;

import io.heartgate.scheduler.request.RequestFacts;
import java.util.Set;

/**
 * One step between a parsed request and the relay (authenticate, admit, choose by affinity,
 * route): it looks at the {@link Call}, may change its facts or headers, and then either passes it
 * on or answers it itself, exactly once, now or later. Stages run in the order the proxy lists
 * them ({@link Stages#standard}); a new feature is a new stage in that list.
 */
public interface Stage {

    /** Handles {@code call}: ends with exactly one of {@link Call#proceed()} or {@link Call#answer(Answer)}. */
    void handle(Call call);

    /** Returns the body's facts this stage reads besides the model, so that the one pass over the body reads them. */
    default Set<RequestFacts.Field> reads() {
        return Set.of();
    }
}

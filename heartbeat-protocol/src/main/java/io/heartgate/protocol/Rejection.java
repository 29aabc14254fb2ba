package io.heartgate.protocol;

import java.util.Objects;

/**
 * Says why a message was rejected: which rule, which field, and a human-readable detail.
 *
 * @param rule the broken rule
 * @param field the JSON path of the offending field (such as {@code load.inFlight} or {@code models[3]}),
 *     or {@code null} when the message as a whole is at fault
 * @param detail a short explanation for logs; never contains more than a short excerpt of the input
 */
public record Rejection(Rule rule, String field, String detail) {

    /** Checks that rule and detail are present. */
    public Rejection {
        Objects.requireNonNull(rule, "rule");
        Objects.requireNonNull(detail, "detail");
    }

    @Override
    public String toString() {
        return field == null
                ? rule.label() + ": " + detail
                : rule.label() + " at " + field + ": " + detail;
    }
}

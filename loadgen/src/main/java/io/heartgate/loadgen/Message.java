package io.heartgate.loadgen;

import java.util.Objects;

/**
 * Holds one chat message as both APIs carry it.
 *
 * @param role {@code user} or {@code assistant}
 * @param content the text; may be empty, never null
 */
public record Message(String role, String content) {

    /** Checks that neither part is null. */
    public Message {
        Objects.requireNonNull(role, "role");
        Objects.requireNonNull(content, "content");
    }
}

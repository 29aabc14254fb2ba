package io.heartgate.sim;

import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Keeps the Responses API answers this node created with {@code store} on, as vLLM keeps them in its
 * process with {@code VLLM_ENABLE_RESPONSES_API_STORE=1}: {@code previous_response_id} and
 * {@code GET /v1/responses/{id}} find only what this very server stored, so another node, or this one
 * after a restart, answers 404 for it.
 *
 * <p>Unlike vLLM's dictionaries, which grow until the process ends, it holds at most {@code capacity}
 * responses: storing one more drops the least recently stored or looked up. Not thread-safe: the
 * server's event loop makes every call.
 */
final class ResponseStore {

    /** How many responses a node keeps unless told otherwise. */
    static final int CAPACITY = 10_000;

    /**
     * One stored response.
     *
     * @param response the response object as it was answered, for retrieval
     * @param history the conversation a continuation starts with: the chat messages of its prompt, the
     *     system message left out (instructions do not carry over), then its answer as an assistant
     *     message (none for an empty answer)
     */
    record Stored(JsonObject response, JsonArray history) {
    }

    private final LinkedHashMap<String, Stored> byId;

    /** Creates a store of {@link #CAPACITY} responses. */
    ResponseStore() {
        this(CAPACITY);
    }

    /** Creates a store of at most {@code capacity} responses (at least 1). */
    ResponseStore(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1, was " + capacity);
        }
        this.byId = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, Stored> eldest) {
                return size() > capacity;
            }
        };
    }

    /** Returns the response stored under {@code id}, or empty; a hit counts as a use. */
    Optional<Stored> get(String id) {
        return Optional.ofNullable(byId.get(id));
    }

    /** Stores {@code stored} under {@code id}, dropping the least recently used when full. */
    void put(String id, Stored stored) {
        byId.put(id, stored);
    }

    /** Returns how many responses are held now. */
    int size() {
        return byId.size();
    }
}

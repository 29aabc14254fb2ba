package io.heartgate.scheduler.request;

/**
 * Holds what routing needs to know of one request, read once from its body by a single streaming
 * pass: the model it names, whether it asked to stream, and the keys later stages read or fill in.
 * Immutable; a stage that learns something new makes a copy.
 *
 * @param model the normalised model name (Ollama's rule: {@code llama3} is {@code llama3:latest}),
 *     or {@code null} when the request names none (it may go to any node)
 * @param stream {@code true} or {@code false} as the body's top-level {@code stream} said, {@code null}
 *     when it said nothing (each API has its own default)
 * @param affinity the hash of the request's affinity key ({@code --affinity-key}: a session header,
 *     a body field, or the prompt's beginning), or {@code null} when it has none or no stage wants one
 * @param caller who sent the request (an API key's name), or {@code null} when unknown
 * @param priority the caller's priority class in the gateway queue (its key's {@code priority=}); 0 by default
 * @param promptBytes the size of the body, from which its prompt's tokens are estimated (a node's
 *     token load); 0 without a body
 * @param node the id of the node the request must go to, or {@code null}: a Responses API request
 *     that continues a response only that node holds ({@code previous_response_id})
 */
public record RequestFacts(String model, Boolean stream, Long affinity, String caller, int priority, int promptBytes,
                           String node) {

    /** Facts in the default priority class. */
    public RequestFacts(String model, Boolean stream, Long affinity, String caller) {
        this(model, stream, affinity, caller, 0, 0, null);
    }

    /** Facts of a body of {@code promptBytes} bytes, in the default priority class. */
    public RequestFacts(String model, Boolean stream, Long affinity, String caller, int promptBytes) {
        this(model, stream, affinity, caller, 0, promptBytes, null);
    }

    /**
     * The facts read from the body only when a stage wants them (the model always is): reading one
     * may mean scanning past a long prompt.
     */
    public enum Field {
        /** The top-level {@code stream} flag. */
        STREAM
    }

    /** The facts of a request whose body says nothing (no body, or not a JSON object). */
    public static final RequestFacts NONE = new RequestFacts(null, null, null, null);

    /** Returns the facts of a request naming {@code model} and nothing else. */
    public static RequestFacts ofModel(String model) {
        return new RequestFacts(model, null, null, null);
    }

    /** Returns a copy with the caller's identity. */
    public RequestFacts withCaller(String who) {
        return new RequestFacts(model, stream, affinity, who, priority, promptBytes, node);
    }

    /** Returns a copy with the caller's identity and priority class. */
    public RequestFacts withCaller(String who, int priorityClass) {
        return new RequestFacts(model, stream, affinity, who, priorityClass, promptBytes, node);
    }

    /** Returns a copy with the affinity key's hash ({@code null}: none). */
    public RequestFacts withAffinity(Long key) {
        return new RequestFacts(model, stream, key, caller, priority, promptBytes, node);
    }

    /** Returns a copy of a body of {@code bytes} bytes. */
    public RequestFacts withPromptBytes(int bytes) {
        return bytes == promptBytes ? this : new RequestFacts(model, stream, affinity, caller, priority, bytes, node);
    }

    /** Returns a copy that must go to the node with id {@code nodeId}. */
    public RequestFacts withNode(String nodeId) {
        return new RequestFacts(model, stream, affinity, caller, priority, promptBytes, nodeId);
    }

    /** Returns the model as users write it, without the {@code :latest} that normalising added; "" for none. */
    public String displayModel() {
        if (model == null) {
            return "";
        }
        return model.endsWith(":latest") ? model.substring(0, model.length() - ":latest".length()) : model;
    }
}

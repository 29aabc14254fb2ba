package io.heartgate.scheduler.request;

import java.util.HashMap;
import java.util.Map;

/**
 * Every path of the proxy port the gateway knows, and what it knows of each: the API dialect, where
 * a request names its model, how its answer streams, where the answer reports its token usage, and
 * whether the gateway answers it itself or refuses it by default. The only place endpoint paths are
 * written; a path not listed is {@link #OTHER}, relayed as it is to the node routing picks. To
 * support a new endpoint, add it here and give it the attributes that already drive routing,
 * usage accounting and the stages.
 */
public enum Endpoint {

    /** OpenAI chat completions: streams as SSE when {@code "stream": true}; usage in the answer, or a stream's last chunk when asked. */
    OPENAI_CHAT("/v1/chat/completions", Dialect.OPENAI, Model.BODY, Streams.WHEN_ASKED, Usage.OPENAI, Role.GENERATION),
    /** OpenAI (legacy) completions, as chat completions. */
    OPENAI_COMPLETIONS("/v1/completions", Dialect.OPENAI, Model.BODY, Streams.WHEN_ASKED, Usage.OPENAI, Role.GENERATION),
    /** OpenAI embeddings: one whole answer with its usage. */
    OPENAI_EMBEDDINGS("/v1/embeddings", Dialect.OPENAI, Model.BODY, Streams.NEVER, Usage.OPENAI, Role.GENERATION),
    /**
     * OpenAI responses (vLLM with its store on): SSE when asked; usage as input and output tokens in
     * the answer or the stream's last event; a follow-up ({@code previous_response_id}) goes to the
     * node that made the response it continues.
     */
    OPENAI_RESPONSES("/v1/responses", Dialect.OPENAI, Model.BODY, Streams.WHEN_ASKED, Usage.INPUT_OUTPUT, Role.GENERATION),
    /**
     * One stored response by id ({@code /v1/responses/{id}}, and its {@code /cancel} and
     * {@code /input_items}): relayed to the node that made it.
     */
    OPENAI_RESPONSE("/v1/responses/", Dialect.OPENAI, Model.NONE, Streams.WHEN_ASKED, Usage.NONE, Role.GENERATION),
    /**
     * Anthropic messages (Ollama, vLLM, llama.cpp): SSE when asked; usage as input and output tokens,
     * a stream's input tokens in its first event ({@code message_start}).
     */
    ANTHROPIC_MESSAGES("/v1/messages", Dialect.ANTHROPIC, Model.BODY, Streams.WHEN_ASKED, Usage.INPUT_OUTPUT, Role.GENERATION),
    /** The models of the routable nodes, answered by the gateway. */
    OPENAI_MODELS("/v1/models", Dialect.OPENAI, Model.NONE, Streams.NEVER, Usage.NONE, Role.CATALOGUE),
    /** One model by id ({@code /v1/models/{id}}, the id escaped as clients send it), answered by the gateway. */
    OPENAI_MODEL("/v1/models/", Dialect.OPENAI, Model.PATH, Streams.NEVER, Usage.NONE, Role.CATALOGUE),
    /** Ollama chat: streams NDJSON unless {@code "stream": false}; usage as its last object's counts. */
    OLLAMA_CHAT("/api/chat", Dialect.OLLAMA, Model.BODY, Streams.BY_DEFAULT, Usage.OLLAMA, Role.GENERATION),
    /** Ollama generate, as chat. */
    OLLAMA_GENERATE("/api/generate", Dialect.OLLAMA, Model.BODY, Streams.BY_DEFAULT, Usage.OLLAMA, Role.GENERATION),
    /** Ollama embeddings. */
    OLLAMA_EMBED("/api/embed", Dialect.OLLAMA, Model.BODY, Streams.NEVER, Usage.OLLAMA, Role.GENERATION),
    /** Ollama's model details: reads the model from disk without loading it. */
    OLLAMA_SHOW("/api/show", Dialect.OLLAMA, Model.BODY_OR_NAME, Streams.NEVER, Usage.NONE, Role.MODEL_INFO),
    /** The models of the routable nodes in Ollama's shape, answered by the gateway. */
    OLLAMA_TAGS("/api/tags", Dialect.OLLAMA, Model.NONE, Streams.NEVER, Usage.NONE, Role.CATALOGUE),
    /** The models the routable nodes hold in memory, in Ollama's shape, answered by the gateway. */
    OLLAMA_PS("/api/ps", Dialect.OLLAMA, Model.NONE, Streams.NEVER, Usage.NONE, Role.CATALOGUE),
    /** Ollama model management: refused unless {@code --allow-model-management}, then pinned to one node. */
    OLLAMA_PULL("/api/pull", Dialect.OLLAMA, Model.BODY_OR_NAME, Streams.BY_DEFAULT, Usage.NONE, Role.MANAGEMENT),
    /** As {@link #OLLAMA_PULL}. */
    OLLAMA_DELETE("/api/delete", Dialect.OLLAMA, Model.BODY_OR_NAME, Streams.NEVER, Usage.NONE, Role.MANAGEMENT),
    /** As {@link #OLLAMA_PULL}. */
    OLLAMA_CREATE("/api/create", Dialect.OLLAMA, Model.BODY, Streams.BY_DEFAULT, Usage.NONE, Role.MANAGEMENT),
    /** As {@link #OLLAMA_PULL}. */
    OLLAMA_COPY("/api/copy", Dialect.OLLAMA, Model.NONE, Streams.NEVER, Usage.NONE, Role.MANAGEMENT),
    /** As {@link #OLLAMA_PULL}. */
    OLLAMA_PUSH("/api/push", Dialect.OLLAMA, Model.BODY, Streams.BY_DEFAULT, Usage.NONE, Role.MANAGEMENT),
    /** Any other path: relayed as it is; a POST's answer still counted when it reports OpenAI usage. */
    OTHER("", Dialect.UNKNOWN, Model.BODY, Streams.WHEN_ASKED, Usage.OPENAI, Role.GENERATION);

    /** The API family an endpoint belongs to. */
    public enum Dialect { OPENAI, OLLAMA, ANTHROPIC, UNKNOWN }

    /** Where a request names its model. */
    public enum Model {
        /** The body's top-level {@code model}. */
        BODY,
        /** The body's {@code model}, else Ollama's older {@code name}. */
        BODY_OR_NAME,
        /** The path, after the endpoint's prefix. */
        PATH,
        /** Nowhere. */
        NONE
    }

    /** How an answer streams. */
    public enum Streams {
        /** Only when the body's {@code stream} says so (OpenAI's and Anthropic's default is a whole answer). */
        WHEN_ASKED,
        /** Unless the body's {@code stream} says not to (Ollama's default). */
        BY_DEFAULT,
        /** Never. */
        NEVER
    }

    /** Where an answer reports the tokens it used, as the gateway reads it. */
    public enum Usage {
        /** OpenAI's {@code usage} object (a stream's last chunk carries it only when asked). */
        OPENAI,
        /** Ollama's {@code prompt_eval_count} and {@code eval_count} on the last object. */
        OLLAMA,
        /** A {@code usage} object's {@code input_tokens} and {@code output_tokens} (Anthropic's, OpenAI's responses). */
        INPUT_OUTPUT,
        /** Not read. */
        NONE
    }

    /** What the gateway does with the endpoint. */
    public enum Role {
        /** Relayed to a node routing picks; loads the model there. */
        GENERATION,
        /** Relayed to a node serving the model, which reads it without loading it. */
        MODEL_INFO,
        /** Answered by the gateway from the table. */
        CATALOGUE,
        /** Changes a node's models: refused by default, else sent to the one node a header names. */
        MANAGEMENT
    }

    private static final Map<String, Endpoint> BY_PATH = new HashMap<>();

    static {
        for (Endpoint e : values()) {
            if (e != OTHER && e != OPENAI_MODEL && e != OPENAI_RESPONSE) {
                BY_PATH.put(e.path, e);
            }
        }
    }

    private final String path;
    private final Dialect dialect;
    private final Model model;
    private final Streams streams;
    private final Usage usage;
    private final Role role;

    Endpoint(String path, Dialect dialect, Model model, Streams streams, Usage usage, Role role) {
        this.path = path;
        this.dialect = dialect;
        this.model = model;
        this.streams = streams;
        this.usage = usage;
        this.role = role;
    }

    /**
     * Returns the endpoint of a request target in origin form ({@code /path?query}); {@link #OTHER}
     * for a path not listed. Allocates only for a target with a query.
     */
    public static Endpoint of(String target) {
        int q = target.indexOf('?');
        String path = q < 0 ? target : target.substring(0, q);
        Endpoint e = BY_PATH.get(path);
        if (e != null) {
            return e;
        }
        if (path.length() > OPENAI_RESPONSE.path.length() && path.startsWith(OPENAI_RESPONSE.path)) {
            return OPENAI_RESPONSE;
        }
        return path.length() > OPENAI_MODEL.path.length() && path.startsWith(OPENAI_MODEL.path) ? OPENAI_MODEL : OTHER;
    }

    /** Returns the path (for {@link #OPENAI_MODEL} and {@link #OPENAI_RESPONSE}, the prefix the id follows; empty for {@link #OTHER}). */
    public String path() {
        return path;
    }

    /** Returns the API family. */
    public Dialect dialect() {
        return dialect;
    }

    /** Returns where a request names its model. */
    public Model model() {
        return model;
    }

    /** Returns how the answer streams. */
    public Streams streams() {
        return streams;
    }

    /** Returns where the answer reports its token usage. */
    public Usage usage() {
        return usage;
    }

    /** Returns what the gateway does with it. */
    public Role role() {
        return role;
    }

    /** Returns whether Ollama's {@code name} names the model where {@code model} is absent. */
    public boolean modelInName() {
        return model == Model.BODY_OR_NAME;
    }

    /** Returns whether an answer streams when the body says nothing of {@code stream}. */
    public boolean streamsByDefault() {
        return streams == Streams.BY_DEFAULT;
    }

    /** Returns whether this is an OpenAI or Ollama text generation, whose prompt a node reads before answering. */
    public boolean generatesText() {
        return this == OPENAI_CHAT || this == OPENAI_COMPLETIONS || this == OLLAMA_CHAT || this == OLLAMA_GENERATE;
    }

    /** Returns whether a stream of this endpoint reports usage only when asked ({@code stream_options.include_usage}). */
    public boolean usageWhenAsked() {
        return this == OPENAI_CHAT || this == OPENAI_COMPLETIONS;
    }
}

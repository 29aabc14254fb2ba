package io.heartgate.scheduler.migration;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;

/**
 * Builds the request that asks another node to go on from the text a cut stream already sent, in
 * the form that node's server understands. Pure: the original body, what was sent and the node's
 * backend in, the new body (or the reason there is none) out.
 *
 * <p>A chat continues as a final assistant message holding the text, which each server treats its
 * own way:
 * <ul>
 *   <li>vLLM continues it only with {@code continue_final_message: true} and
 *       {@code add_generation_prompt: false}, and answers 400 to the first without the second
 *       (validator {@code check_generation_prompt}, {@code vllm/entrypoints/openai/chat_completion/protocol.py});
 *   <li>llama.cpp's server continues a final assistant message by default and accepts the same pair
 *       ({@code tools/server/server-common.cpp}, {@code oaicompat_chat_params_parse});
 *   <li>TGI continues a final assistant message implicitly and has no flag
 *       ({@code router/src/infer/chat_template.rs});
 *   <li>Ollama continues only where the model's template allows it, which the gateway does not
 *       know, and a server reported only as OpenAI-compatible may be any of the above: neither is
 *       continued.
 * </ul>
 * Several servers trim the final message's trailing whitespace ({@code rstrip} in the chat
 * template), so the text goes without it whatever the server, and {@link Splice} keeps the client
 * from seeing it twice. A completion continues as its prompt followed by the text, which needs no
 * template. The token limit ({@code max_tokens}, {@code max_completion_tokens}) is reduced by the
 * tokens already sent, to at least 1.
 */
public final class Continuation {

    /** Why a stream cannot be continued, or the request that continues it. */
    public record Result(byte[] body, String refusal) {
        static Result refused(String why) {
            return new Result(null, why);
        }
    }

    private Continuation() {
    }

    /** Says whether {@code sent} can be continued at all, before a node is chosen: {@code null} when it can, else why not. */
    public static String refusal(Sent sent) {
        if (sent.events() == 0) {
            return "no event of the answer was read";
        }
        if (sent.finished()) {
            return "the answer had already ended";
        }
        if (sent.toolCalls()) {
            return "a tool call was being streamed";
        }
        if (sent.reasoning()) {
            return "the cut fell inside a reasoning block";
        }
        return null;
    }

    /**
     * Returns the request that asks a node of {@code backend} to continue {@code sent}, the answer to
     * {@code body}; {@code prefill}: whether that node said its server continues a final assistant
     * message for the model (Ollama's template, as its agent reads it), or {@code null} when unknown.
     */
    public static Result of(Form form, byte[] body, Sent sent, String backend, Boolean prefill) {
        String why = refusal(sent);
        if (why != null) {
            return Result.refused(why);
        }
        JsonNode parsed;
        try {
            parsed = Sent.JSON.readTree(body);
        } catch (IOException e) {
            return Result.refused("the request body is not JSON");
        }
        if (!(parsed instanceof ObjectNode request)) {
            return Result.refused("the request body is not a JSON object");
        }
        if (request.path("n").asInt(1) > 1 || request.path("best_of").asInt(1) > 1) {
            return Result.refused("the request asks for several choices");
        }
        String refusal = switch (form) {
            case OPENAI_CHAT -> chat(request, sent, backend);
            case OPENAI_COMPLETIONS -> completion(request, sent);
            case OLLAMA_GENERATE -> rawGenerate(request, sent);
            case ANTHROPIC_MESSAGES -> anthropic(request, sent, backend);
            case OLLAMA_CHAT -> ollamaChat(request, sent, prefill);
        };
        if (refusal != null) {
            return Result.refused(refusal);
        }
        if (request.get("options") instanceof ObjectNode options && options.path("num_predict").isNumber()
                && options.get("num_predict").asInt() > 0) {
            options.put("num_predict", Math.max(1, options.get("num_predict").asInt() - sent.tokens()));
        }
        for (String limit : new String[] {"max_tokens", "max_completion_tokens"}) {
            if (request.path(limit).isNumber()) {
                request.put(limit, Math.max(1, request.get(limit).asInt() - sent.tokens()));
            }
        }
        try {
            return new Result(Sent.JSON.writeValueAsBytes(request), null);
        } catch (IOException e) {
            return Result.refused("the continuation cannot be written: " + e.getMessage());
        }
    }

    private static String chat(ObjectNode request, Sent sent, String backend) {
        boolean flags;
        if ("vllm".equals(backend) || "llamacpp".equals(backend)) {
            flags = true;
        } else if ("tgi".equals(backend)) {
            flags = false;
        } else {
            return "a node of backend '" + backend + "' may not continue a final assistant message";
        }
        String refusal = withAnswer(request, sent);
        if (refusal != null) {
            return refusal;
        }
        if (flags) {
            request.put("continue_final_message", true);
            request.put("add_generation_prompt", false);
        }
        return null;
    }

    private static String completion(ObjectNode request, Sent sent) {
        if (!request.path("prompt").isTextual()) {
            return "the prompt is not one text";
        }
        request.put("prompt", request.get("prompt").asText() + sent.text());
        request.remove("echo"); // the client has the prompt already
        return null;
    }

    /**
     * Anthropic's messages continue as a final assistant message on llama.cpp's server, which turns
     * the request into a chat and prefills it ({@code server_chat_convert_anthropic_to_oai} in
     * {@code tools/server/server-chat.cpp}, then {@code oaicompat_chat_params_parse}); vLLM's
     * {@code /v1/messages} sets no continuation flag ({@code vllm/entrypoints/anthropic/serving.py}),
     * so it would answer anew. A client's own prefill (a final assistant message with text) goes on
     * with the text sent: llama.cpp refuses two assistant messages at the end.
     */
    private static String anthropic(ObjectNode request, Sent sent, String backend) {
        if (!"llamacpp".equals(backend)) {
            return "a node of backend '" + backend + "' does not continue a final assistant message on /v1/messages";
        }
        return withAnswer(request, sent);
    }

    /**
     * Ollama's {@code /api/chat} has no flag: a final assistant message is continued only where the
     * model's template leaves the last turn open ({@code template/template.go}), which the node's
     * agent reads from {@code /api/show} and reports as the model's {@code prefill}. Unknown or
     * {@code false}: not continued, since the model would start a new answer after the text.
     */
    private static String ollamaChat(ObjectNode request, Sent sent, Boolean prefill) {
        if (!Boolean.TRUE.equals(prefill)) {
            return "the next node's template for the model " + (prefill == null ? "is not known to" : "does not")
                    + " continue a final assistant message";
        }
        return withAnswer(request, sent);
    }

    /**
     * Ends the request's messages with the answer so far as the final assistant message: after the
     * client's own prefill when it sent one (servers refuse two assistant messages at the end, so a
     * prefill that is not one text cannot be continued), without trailing whitespace. Returns why
     * not, or {@code null}.
     */
    private static String withAnswer(ObjectNode request, Sent sent) {
        if (!(request.get("messages") instanceof ArrayNode messages) || messages.isEmpty()) {
            return "the request has no messages";
        }
        JsonNode last = messages.get(messages.size() - 1);
        if (!"assistant".equals(last.path("role").asText())) {
            messages.addObject().put("role", "assistant").put("content", carried(sent.text()));
        } else if (last.path("content").isTextual()) {
            ((ObjectNode) last).put("content", carried(last.get("content").asText() + sent.text()));
        } else {
            return "the client's own prefill is not one text";
        }
        return null;
    }

    /**
     * Ollama's {@code /api/generate}: only with {@code "raw": true}, where the prompt reaches the
     * model as it is; without it the model's template wraps the prompt as a user turn and the text
     * could not be appended. {@code options.num_predict} is reduced as the token limit is; the
     * deprecated {@code context} is dropped (raw mode returns none).
     */
    private static String rawGenerate(ObjectNode request, Sent sent) {
        if (!request.path("raw").asBoolean(false)) {
            return "an Ollama generate without \"raw\": true applies the model's template";
        }
        if (!request.path("prompt").isTextual()) {
            return "the prompt is not one text";
        }
        request.put("prompt", request.get("prompt").asText() + sent.text());
        request.remove("context");
        return null;
    }

    /** Returns the text a chat continues from: without trailing whitespace, nor a replacement character left by a split UTF-8 sequence. */
    static String carried(String text) {
        int end = text.length();
        while (end > 0 && (Character.isWhitespace(text.charAt(end - 1)) || text.charAt(end - 1) == '\uFFFD')) {
            end--;
        }
        return text.substring(0, end);
    }
}

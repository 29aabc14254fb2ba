package io.heartgate.scheduler.migration;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Turns the stream of the node that continues a cut answer into the rest of the stream the client
 * already reads, so that it sees one answer:
 * <ul>
 *   <li>every event keeps the first node's {@code id}, {@code created}, {@code model} and
 *       {@code system_fingerprint};
 *   <li>the new node's role chunk is dropped (the client had one);
 *   <li>whitespace the cut text ended with, which the continuation was sent without, is not sent
 *       twice: the new text's leading whitespace is dropped when the client already has some;
 *   <li>a stop sequence of the request that began in the text already sent and ends in the new
 *       text ends the answer there, as the first node would have (the new node sees only its own text);
 *   <li>usage counts what both nodes did: prompt tokens of both legs (the first leg's estimated as
 *       the second's less the text carried over, when the first reported none) and the completion
 *       tokens of both.
 * </ul>
 * Events are rewritten whole: a part event at the end of a chunk waits for the rest. Not
 * thread-safe; one per migrated answer.
 */
public final class Splice {

    private static final byte[] DONE = "data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8);

    private final Form form;
    private final Sent sent;
    private final List<String> stops;
    private final boolean cutAtWhitespace;
    /** The new node's bytes not yet part of a whole event: split on bytes, so a character or a CRLF split by a read stays whole. */
    private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
    /** The text around the cut a stop sequence could span: the end of the text sent, then the new text. */
    private final StringBuilder window = new StringBuilder();
    private final int carriedInWindow;
    private boolean started;
    private boolean stopped;
    /** Whether the next node's first Anthropic block continues the client's open text block. */
    private boolean joined;

    /** @param requestBody the original request, for its stop sequences */
    public Splice(Form form, Sent sent, byte[] requestBody) {
        this.form = form;
        this.sent = sent;
        this.stops = stops(requestBody);
        String text = sent.text();
        // Only a chat's text is carried without its trailing whitespace; a prompt carries it exactly.
        String beforeReplacement = text.replaceAll("\uFFFD+$", "");
        this.cutAtWhitespace = (form == Form.OPENAI_CHAT || form == Form.ANTHROPIC_MESSAGES || form == Form.OLLAMA_CHAT)
                && !beforeReplacement.isEmpty() && Character.isWhitespace(beforeReplacement.charAt(beforeReplacement.length() - 1));
        int longest = stops.stream().mapToInt(String::length).max().orElse(0);
        window.append(text, Math.max(0, text.length() - Math.max(0, longest - 1)), text.length());
        this.carriedInWindow = window.length();
    }

    /** Says whether a stop sequence across the cut ended the answer: the new node's remaining stream is not wanted. */
    public boolean stopped() {
        return stopped;
    }

    /** Returns what the client gets for the next {@code chunk} of the new node's stream (possibly nothing). */
    public byte[] next(byte[] chunk) {
        if (stopped) {
            return new byte[0];
        }
        pending.writeBytes(chunk);
        byte[] in = pending.toByteArray();
        ByteArrayOutputStream out = new ByteArrayOutputStream(chunk.length + 64);
        int start = 0;
        for (int i = 0; i < in.length && !stopped; i++) {
            if (in[i] != '\n') {
                continue;
            }
            int next = i + 1; // past the event's end: its blank line (SSE, LF or CRLF), or its line (NDJSON)
            if (form.sse()) {
                if (next < in.length && in[next] == '\n') {
                    next++;
                } else if (next + 1 < in.length && in[next] == '\r' && in[next + 1] == '\n') {
                    next += 2;
                } else {
                    continue;
                }
            }
            String event = new String(in, start, i - start, StandardCharsets.UTF_8).replace("\r\n", "\n").strip();
            start = next;
            i = next - 1;
            if (event.isEmpty()) {
                continue;
            }
            if (form == Form.ANTHROPIC_MESSAGES) {
                anthropic(event, out);
            } else if (form.sse()) {
                event(event, out);
            } else {
                line(event, out);
            }
        }
        pending.reset();
        pending.write(in, start, in.length - start);
        return out.toByteArray();
    }

    /** One Ollama object: the first node's model, the text as for a chunk, and the last one's counts summed. */
    private void line(String line, ByteArrayOutputStream out) {
        JsonNode parsed = Sent.parse(line);
        if (!(parsed instanceof ObjectNode o)) {
            write(out, line + "\n");
            return;
        }
        if (sent.model() != null) {
            o.put("model", sent.model());
        }
        boolean done = o.path("done").asBoolean(false);
        boolean chat = form == Form.OLLAMA_CHAT;
        if (chat && !(o.get("message") instanceof ObjectNode)) {
            write(out, o + "\n");
            return;
        }
        if (!text(chat ? (ObjectNode) o.get("message") : o, chat ? "content" : "response") && !done) {
            return;
        }
        if (stopped) {
            o.put("done", true);
            o.put("done_reason", "stop");
        }
        if (o.path("done").asBoolean(false) && o.has("eval_count")) {
            int prompt = o.path("prompt_eval_count").asInt(0);
            int completion = o.path("eval_count").asInt(0);
            o.put("prompt_eval_count", Math.max(0, prompt - sent.tokens()) + prompt);
            o.put("eval_count", sent.tokens() + completion);
        }
        write(out, o + "\n");
    }

    /**
     * One Anthropic event. The client has had {@code message_start} and its text block (index
     * {@link Sent#block()}) is still open: the new node's {@code message_start} and the start of its
     * first text block are dropped, its blocks are numbered on from the client's, its output tokens
     * are added to those sent. A stop sequence across the cut closes the block and the message.
     */
    private void anthropic(String event, ByteArrayOutputStream out) {
        String data = data(event);
        JsonNode parsed = data == null ? null : Sent.parse(data);
        if (!(parsed instanceof ObjectNode o)) {
            write(out, event + "\n\n");
            return;
        }
        String type = o.path("type").asText();
        if (type.equals("message_start")) {
            return;
        }
        if (type.equals("content_block_start") && o.path("index").asInt() == 0) {
            // The next node's first block goes on in the client's open text block, if it is text too;
            // otherwise that block is closed and the new ones are numbered after it.
            joined = sent.block() >= 0 && o.path("content_block").path("type").asText().equals("text");
            if (joined) {
                return;
            }
            if (sent.block() >= 0) {
                write(out, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":" + sent.block()
                        + "}\n\n");
            }
        }
        if (o.has("index")) {
            int index = o.get("index").asInt();
            o.put("index", joined && index == 0 ? sent.block() : index + sent.blocks() - (joined ? 1 : 0));
        }
        if (type.equals("content_block_delta") && o.get("delta") instanceof ObjectNode delta
                && delta.path("type").asText().equals("text_delta")) {
            boolean kept = text(delta, "text");
            if (!kept && !stopped) {
                return;
            }
        }
        if (type.equals("message_delta") && o.get("usage") instanceof ObjectNode usage && usage.has("output_tokens")) {
            usage.put("output_tokens", usage.get("output_tokens").asInt() + sent.tokens());
        }
        write(out, "event: " + type + "\ndata: " + o + "\n\n");
        if (stopped) {
            int index = o.path("index").asInt(Math.max(0, sent.block()));
            write(out, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":" + index + "}\n\n");
            write(out, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
                    + "\"stop_sequence\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":" + sent.tokens() + "}}\n\n");
            write(out, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
        }
    }

    /** Returns an SSE event's {@code data:} payload (its lines joined), or {@code null} when it has none. */
    private static String data(String event) {
        StringBuilder data = null;
        for (String line : event.split("\n")) {
            if (line.startsWith("data:")) {
                data = data == null ? new StringBuilder() : data.append('\n');
                data.append(line.substring(line.startsWith("data: ") ? 6 : 5));
            }
        }
        return data == null ? null : data.toString().trim();
    }

    /** One SSE event: the first node's ids, the choice's text, usage summed. */
    private void event(String event, ByteArrayOutputStream out) {
        String data = data(event);
        if (data == null || data.equals("[DONE]")) {
            write(out, event + "\n\n");
            return;
        }
        JsonNode parsed = Sent.parse(data);
        if (!(parsed instanceof ObjectNode o)) {
            write(out, event + "\n\n");
            return;
        }
        if (sent.id() != null) {
            o.put("id", sent.id());
        }
        if (sent.created() != null) {
            o.set("created", sent.created());
        }
        if (sent.model() != null) {
            o.put("model", sent.model());
        }
        if (sent.fingerprint() != null) {
            o.put("system_fingerprint", sent.fingerprint());
        } else {
            o.remove("system_fingerprint");
        }
        if (o.get("usage") instanceof ObjectNode usage) {
            sumUsage(usage);
        }
        if (o.get("choices") instanceof ArrayNode choices && !choices.isEmpty() && choices.get(0) instanceof ObjectNode c) {
            if (!choice(c)) {
                return; // the new node's role chunk, or nothing left of a chunk of whitespace
            }
        }
        write(out, "data: " + o + "\n\n");
        if (stopped) {
            out.writeBytes(DONE);
        }
    }

    /** Rewrites one OpenAI choice; returns whether its event is still sent. */
    private boolean choice(ObjectNode choice) {
        boolean finishing = choice.hasNonNull("finish_reason");
        if (form != Form.OPENAI_CHAT) {
            boolean kept = text(choice, "text");
            if (stopped) {
                choice.put("finish_reason", "stop");
            }
            return kept || finishing;
        }
        if (!(choice.get("delta") instanceof ObjectNode delta)) {
            return true;
        }
        delta.remove("role");
        boolean kept = text(delta, "content");
        if (stopped) {
            choice.put("finish_reason", "stop");
        }
        return kept || finishing || delta.size() > 1;
    }

    /**
     * Rewrites the text in {@code holder}'s {@code field}: whitespace at the cut, a stop sequence
     * across it ({@link #stopped} then). Returns whether any text is left.
     */
    private boolean text(ObjectNode holder, String field) {
        String piece = holder.path(field).asText("");
        if (!started && !piece.isEmpty()) {
            if (cutAtWhitespace) {
                piece = piece.stripLeading();
            }
            started = !piece.isEmpty();
            holder.put(field, piece);
        }
        if (!piece.isEmpty() && !stops.isEmpty() && window.length() - carriedInWindow < longestStop()) {
            int keep = stopAt(piece);
            if (keep >= 0) {
                holder.put(field, piece.substring(0, keep));
                stopped = true;
                return true;
            }
        }
        return !piece.isEmpty();
    }

    /** Appends {@code piece} to the window; returns how much of it precedes a stop sequence that began in the text sent, or -1. */
    private int stopAt(String piece) {
        int before = window.length();
        window.append(piece);
        for (int start = Math.max(0, before - longestStop() + 1); start < carriedInWindow; start++) {
            for (String stop : stops) {
                if (start + stop.length() > before && window.indexOf(stop, start) == start) {
                    return Math.max(0, start - before);
                }
            }
        }
        return -1;
    }

    private int longestStop() {
        return stops.stream().mapToInt(String::length).max().orElse(0);
    }

    private void sumUsage(ObjectNode usage) {
        int prompt = usage.path("prompt_tokens").asInt(0);
        int completion = usage.path("completion_tokens").asInt(0);
        int firstPrompt = Math.max(0, prompt - sent.tokens());
        usage.put("prompt_tokens", firstPrompt + prompt);
        usage.put("completion_tokens", sent.tokens() + completion);
        usage.put("total_tokens", firstPrompt + prompt + sent.tokens() + completion);
    }

    private static void write(ByteArrayOutputStream out, String s) {
        out.writeBytes(s.getBytes(StandardCharsets.UTF_8));
    }

    private static List<String> stops(byte[] body) {
        List<String> out = new ArrayList<>();
        try {
            JsonNode request = Sent.JSON.readTree(body);
            JsonNode stop = request.has("stop") ? request.path("stop")
                    : request.has("stop_sequences") ? request.path("stop_sequences") : request.path("options").path("stop");
            if (stop.isTextual()) {
                out.add(stop.asText());
            } else if (stop.isArray()) {
                stop.forEach(s -> {
                    if (s.isTextual() && !s.asText().isEmpty()) {
                        out.add(s.asText());
                    }
                });
            }
        } catch (IOException e) {
            // no stop sequences to apply: the continuation request was built from the same body
        }
        out.removeIf(String::isEmpty);
        return List.copyOf(out);
    }
}

package io.heartgate.scheduler.affinity;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/**
 * Hashes the beginning of one request's prompt as the body is parsed, for the {@code prefix}
 * affinity key: the conversation's messages in order (each message's text, then its role), through
 * the first user message and at most {@code limit} characters; or, for a body without
 * {@code messages} (Ollama's {@code /api/generate}, OpenAI's {@code /v1/completions}), the
 * {@code system} text and then the {@code prompt}, within the same limit. Ending at the first user
 * message is what gives every turn of a conversation one key: each turn resends the same system
 * prompt and first question and appends the rest, so the node that kept the conversation's KV
 * blocks gets the next turn too, while conversations under different system prompts (or opening
 * with different questions) get different keys. One per parse; not thread-safe.
 */
public final class PrefixHasher {

    private final int limit;
    private final KeyHash hash = new KeyHash();
    private int used;
    private boolean messagesSeen;
    private String system;
    private String prompt;
    private boolean finished;
    private Long key;

    /** Creates a hasher of at most {@code limit} characters. */
    public PrefixHasher(int limit) {
        this.limit = limit;
    }

    /**
     * Reads a top-level {@code messages} array, the parser on its {@code START_ARRAY}, and leaves the
     * parser on its {@code END_ARRAY}. Messages after the first user one are skipped, not read.
     */
    public void messages(JsonParser p) throws IOException {
        if (messagesSeen) {
            p.skipChildren(); // a second messages field: the first one read decides, not a mix of both
            return;
        }
        messagesSeen = true;
        boolean done = false;
        JsonToken t;
        while ((t = p.nextToken()) != JsonToken.END_ARRAY && t != null) {
            if (t != JsonToken.START_OBJECT || done) {
                if (t.isStructStart()) {
                    p.skipChildren();
                }
                continue;
            }
            String role = null;
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken v = p.nextToken();
                if (field.equals("role") && v == JsonToken.VALUE_STRING) {
                    role = p.getText();
                } else if (field.equals("content")) {
                    content(p, v);
                } else if (v.isStructStart()) {
                    p.skipChildren();
                }
            }
            if (role != null && used < limit) {
                hash.add('\u0000').add(role).add('\n');
            }
            done = "user".equals(role) || used >= limit;
        }
    }

    /** A message's content: a string, or OpenAI's array of parts, whose {@code text} parts count. */
    private void content(JsonParser p, JsonToken v) throws IOException {
        if (v == JsonToken.VALUE_STRING) {
            text(p);
        } else if (v == JsonToken.START_ARRAY) {
            JsonToken t;
            while ((t = p.nextToken()) != JsonToken.END_ARRAY && t != null) {
                if (t != JsonToken.START_OBJECT) {
                    if (t.isStructStart()) {
                        p.skipChildren();
                    }
                    continue;
                }
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String field = p.currentName();
                    JsonToken pv = p.nextToken();
                    if (field.equals("text") && pv == JsonToken.VALUE_STRING) {
                        text(p);
                    } else if (pv.isStructStart()) {
                        p.skipChildren();
                    }
                }
            }
        } else if (v.isStructStart()) {
            p.skipChildren();
        }
    }

    private void text(JsonParser p) throws IOException {
        int room = limit - used;
        if (room <= 0) {
            return;
        }
        int n = Math.min(room, p.getTextLength());
        hash.add(p.getTextCharacters(), p.getTextOffset(), n).add('\u0001'); // "ab","c" is not "a","bc"
        used += n;
    }

    /** A top-level {@code system} string, the parser on it. */
    public void system(JsonParser p) throws IOException {
        system = head(p);
    }

    /**
     * A top-level {@code prompt}: a string, or the first string of an array of them; the parser on its
     * value, and past it when the value is nested.
     */
    public void prompt(JsonParser p, JsonToken v) throws IOException {
        if (v == JsonToken.VALUE_STRING) {
            prompt = head(p);
        } else if (v == JsonToken.START_ARRAY) {
            JsonToken t;
            while ((t = p.nextToken()) != JsonToken.END_ARRAY && t != null) {
                if (t == JsonToken.VALUE_STRING && prompt == null) {
                    prompt = head(p);
                } else if (t.isStructStart()) {
                    p.skipChildren();
                }
            }
        } else if (v.isStructStart()) {
            p.skipChildren();
        }
    }

    private String head(JsonParser p) throws IOException {
        return new String(p.getTextCharacters(), p.getTextOffset(), Math.min(limit, p.getTextLength()));
    }

    /** Returns whether the key is known whatever follows in the body: the messages were read. */
    public boolean complete() {
        return messagesSeen;
    }

    /** Returns the key, or {@code null} when the body had no prompt text. */
    public Long key() {
        if (finished) {
            return key;
        }
        finished = true;
        if (!messagesSeen && (system != null || prompt != null)) {
            for (String part : new String[] {system, prompt}) {
                if (part != null && used < limit) {
                    int n = Math.min(limit - used, part.length());
                    hash.add(part.substring(0, n)).add('\u0000');
                    used += n;
                }
            }
        }
        key = used == 0 ? null : hash.value();
        return key;
    }
}

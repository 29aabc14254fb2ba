package io.heartgate.scheduler.proxy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.heartgate.scheduler.affinity.AffinityKeys;
import io.heartgate.scheduler.affinity.KeyHash;
import io.heartgate.scheduler.affinity.PrefixHasher;
import io.heartgate.scheduler.request.BodyJson;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.request.JsonFlags;
import io.heartgate.scheduler.request.RequestFacts;
import io.heartgate.scheduler.table.ModelNames;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Reads a request's {@link RequestFacts} from its aggregated body in one pass of Jackson's
 * streaming parser, or of {@link TopLevelModel} when only the model is wanted (the same answer
 * without allocating; what it does not read goes to Jackson): top-level fields only, nothing nested
 * built, stopping once every field wanted is found. Routing always wants the model; the others are
 * read only when a stage wants them ({@code Stage.reads()}), so that a long prompt after the model
 * is not scanned for nothing. The model is the top-level
 * {@code model}, or Ollama's older {@code name} on {@code /api/show}, {@code /api/pull} and
 * {@code /api/delete}. A body that is not a JSON object gives {@link RequestFacts#NONE}: the node
 * will say what is wrong with it.
 *
 * <p>With {@link AffinityKeys} (the {@code affinity} strategy), the same pass also finds the
 * request's affinity key: the first of its sources present, a header looked up before the body is
 * touched, so that a request carrying a session header pays nothing more; body fields and the
 * prompt's beginning ({@link PrefixHasher}) are read only while no earlier source has a value.
 * Thread-safe.
 */
public final class RequestFactsReader {

    private static final JsonFactory JSON = BodyJson.FACTORY;

    private final boolean wantsStream;
    /** Whether only the model is wanted, so that {@link TopLevelModel} reads it without Jackson. */
    private final boolean fast;
    /** Where affinity keys come from, or {@code null} when no key is wanted. */
    private final AffinityKeys keys;
    private final int prefixIndex;
    private final int firstBodyIndex;

    /** The most model names {@link #normalized} keeps: a client sending new names every time only refills it. */
    private static final int NAMES_KEPT = 4096;
    /** Model names as sent -> as routing knows them, so a name without a tag is not rebuilt per request. */
    private final ConcurrentHashMap<String, String> names = new ConcurrentHashMap<>();
    /** The longest model name {@link #names} keeps: a body-sized name is normalised, never kept. */
    private static final int NAME_KEPT_CHARS = 256;

    /** Returns {@link ModelNames#normalize}'s answer for {@code model}, from {@link #names} once known. */
    private String normalized(String model) {
        if (model.length() > NAME_KEPT_CHARS) {
            return ModelNames.normalize(model);
        }
        String known = names.get(model);
        if (known == null) {
            known = ModelNames.normalize(model);
            if (names.size() >= NAMES_KEPT) {
                names.clear();
            }
            names.put(model, known);
        }
        return known;
    }

    /** Creates a reader of the model and the {@code wanted} fields besides. */
    public RequestFactsReader(Set<RequestFacts.Field> wanted) {
        this(wanted, null);
    }

    /** Creates a reader of the model, the {@code wanted} fields and, unless {@code keys} is {@code null}, the affinity key. */
    public RequestFactsReader(Set<RequestFacts.Field> wanted, AffinityKeys keys) {
        this(wanted, keys, true);
    }

    /** As {@link #RequestFactsReader(Set, AffinityKeys)}; without {@code fast}, always with Jackson (the fast path's reference). */
    RequestFactsReader(Set<RequestFacts.Field> wanted, AffinityKeys keys, boolean fast) {
        this.fast = fast && keys == null && !wanted.contains(RequestFacts.Field.STREAM);
        this.wantsStream = wanted.contains(RequestFacts.Field.STREAM);
        this.keys = keys;
        int prefix = -1;
        int body = -1;
        for (int i = 0; keys != null && i < keys.sources().size(); i++) {
            AffinityKeys.Source s = keys.sources().get(i);
            if (s instanceof AffinityKeys.Source.Prefix) {
                prefix = i;
            } else if (s instanceof AffinityKeys.Source.Body && body < 0) {
                body = i;
            }
        }
        this.prefixIndex = prefix;
        this.firstBodyIndex = body;
    }

    /** Returns the facts of a request to {@code uri} with the readable bytes of {@code body}, without its headers. */
    public RequestFacts read(ByteBuf body, String uri) {
        return read(body, uri, NO_HEADERS);
    }

    /** A request's headers where reading needs none of them. */
    static final Function<String, String> NO_HEADERS = name -> null;

    /**
     * Returns the facts of a request to {@code uri} with the readable bytes of {@code body} (indexes
     * untouched) and the headers {@code header} looks up by name.
     */
    public RequestFacts read(ByteBuf body, String uri, Function<String, String> header) {
        return read(body, Endpoint.of(uri), header);
    }

    /**
     * Returns the facts of a request to {@code endpoint} with the readable bytes of {@code body}
     * (indexes untouched) and the headers {@code header} looks up by name.
     */
    public RequestFacts read(ByteBuf body, Endpoint endpoint, Function<String, String> header) {
        Affinity a = NO_KEY;
        if (keys != null) {
            a = new Affinity();
            a.fromHeaders(keys, header);
        }
        if (!TopLevelFields.startsWithBrace(body)) {
            return a.key == null ? RequestFacts.NONE : RequestFacts.NONE.withAffinity(a.key);
        }
        boolean nameIsModel = endpoint.modelInName();
        if (fast) {
            String model = TopLevelModel.find(body, nameIsModel);
            if (model == TopLevelModel.NONE) {
                return RequestFacts.NONE;
            }
            if (model != TopLevelModel.DECLINED) {
                return new RequestFacts(normalized(model), null, null, null, body.readableBytes());
            }
        }
        if (body.hasArray()) {
            return read(body.array(), body.arrayOffset() + body.readerIndex(), body.readableBytes(), nameIsModel, a);
        }
        try (InputStream in = new ByteBufInputStream(body.duplicate()); JsonParser p = JSON.createParser(in)) {
            return read(p, nameIsModel, a, body.readableBytes());
        } catch (IOException e) {
            return a.key == null ? RequestFacts.NONE : RequestFacts.NONE.withAffinity(a.key);
        }
    }

    /** Returns the facts of {@code body[offset, offset+length)}; {@code nameIsModel} for Ollama's management paths. */
    public RequestFacts read(byte[] body, int offset, int length, boolean nameIsModel) {
        return read(body, offset, length, nameIsModel, keys == null ? NO_KEY : new Affinity());
    }

    /** Returns whether reading needs the request's headers (an affinity source is a header). */
    public boolean readsHeaders() {
        return keys != null && keys.sources().stream().anyMatch(s -> s instanceof AffinityKeys.Source.Header);
    }

    /** The affinity state of a reader that wants no key: never written, so shared. */
    private static final Affinity NO_KEY = new Affinity();

    private RequestFacts read(byte[] body, int offset, int length, boolean nameIsModel, Affinity a) {
        if (length == 0) {
            return a.key == null ? RequestFacts.NONE : RequestFacts.NONE.withAffinity(a.key);
        }
        try (JsonParser p = JSON.createParser(body, offset, length)) {
            return read(p, nameIsModel, a, length);
        } catch (IOException e) {
            return a.key == null ? RequestFacts.NONE : RequestFacts.NONE.withAffinity(a.key);
        }
    }

    /** The affinity key found so far: {@code key} from the source at {@code best}, the lower the earlier. */
    private static final class Affinity {
        int best = Integer.MAX_VALUE;
        Long key;
        PrefixHasher prefix;

        void fromHeaders(AffinityKeys keys, Function<String, String> header) {
            for (int i = 0; i < keys.sources().size(); i++) {
                if (keys.sources().get(i) instanceof AffinityKeys.Source.Header h) {
                    String v = header.apply(h.name());
                    if (v != null && !v.isBlank()) {
                        best = i;
                        key = KeyHash.of(v.trim());
                        return;
                    }
                }
            }
        }
    }

    private RequestFacts read(JsonParser p, boolean nameIsModel, Affinity a, int bytes) throws IOException {
        if (p.nextToken() != JsonToken.START_OBJECT) {
            return a.key == null ? RequestFacts.NONE : RequestFacts.NONE.withAffinity(a.key);
        }
        boolean wantsKey = keys != null && keys.readsBodyBefore(a.best);
        if (wantsKey && prefixIndex >= 0 && prefixIndex < a.best) {
            a.prefix = new PrefixHasher(keys.prefixChars());
        }
        String model = null;
        String name = null;
        Boolean stream = null;
        boolean modelSeen = false;
        try {
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                if (wantsKey && affinityField(p, field, value, a)) {
                    // read (a nested prompt consumed): nothing more to do with this field
                } else if (value.isStructStart()) {
                    p.skipChildren(); // nested: never a fact, whatever its name
                    if (field.equals("model")) {
                        modelSeen = true;
                        model = null;
                    }
                } else if (field.equals("model")) {
                    modelSeen = true;
                    model = value == JsonToken.VALUE_STRING ? p.getText() : null;
                } else if (field.equals("name") && nameIsModel && value == JsonToken.VALUE_STRING) {
                    name = p.getText();
                } else if (field.equals("stream") && wantsStream) {
                    stream = JsonFlags.read(p, value); // 1 or "true" stream on a pydantic server
                }
                if (modelSeen && (!wantsStream || stream != null) && (!wantsKey || keyKnown(a))) {
                    break; // every field wanted is known: the rest of the body is the node's business
                }
            }
        } catch (IOException e) {
            // Broken JSON after the fields already read: route on those; the node will reject the body.
        }
        if (a.prefix != null && prefixIndex < a.best) {
            Long k = a.prefix.key();
            if (k != null) {
                a.best = prefixIndex;
                a.key = k;
            }
        }
        String chosen = modelSeen ? model : name;
        return chosen == null && stream == null && a.key == null ? RequestFacts.NONE
                : new RequestFacts(ModelNames.normalize(chosen), stream, a.key, null, bytes);
    }

    /**
     * Reads a top-level field as an affinity source if it is one that could still win; returns
     * whether it consumed a nested value (the prompt's messages or parts).
     */
    private boolean affinityField(JsonParser p, String field, JsonToken value, Affinity a) throws IOException {
        int i = keys.bodyIndex(field);
        if (i >= 0 && i < a.best) {
            if (value == JsonToken.VALUE_STRING || value.isNumeric()) {
                String v = p.getText().trim();
                if (!v.isEmpty()) {
                    a.best = i;
                    a.key = KeyHash.of(v);
                }
            }
            return false;
        }
        if (a.prefix == null || prefixIndex >= a.best) {
            return false;
        }
        switch (field) {
            case "messages" -> {
                if (value == JsonToken.START_ARRAY) {
                    a.prefix.messages(p);
                    Long k = a.prefix.key(); // complete now: it beats every later source at once
                    if (k != null) {
                        a.best = prefixIndex;
                        a.key = k;
                    }
                    return true;
                }
            }
            case "system" -> {
                if (value == JsonToken.VALUE_STRING) {
                    a.prefix.system(p);
                }
            }
            case "prompt" -> {
                a.prefix.prompt(p, value);
                return value.isStructStart();
            }
            default -> {
                // not a source
            }
        }
        return false;
    }

    /** Returns whether no source that could still appear in the body would beat the key found. */
    private boolean keyKnown(Affinity a) {
        boolean bodyPending = firstBodyIndex >= 0 && firstBodyIndex < a.best;
        boolean prefixPending = a.prefix != null && prefixIndex < a.best && !a.prefix.complete();
        return !bodyPending && !prefixPending;
    }
}

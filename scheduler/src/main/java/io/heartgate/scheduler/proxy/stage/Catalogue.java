package io.heartgate.scheduler.proxy.stage;

import io.heartgate.protocol.LoadedModel;
import io.heartgate.protocol.ModelInfo;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.request.ErrorType;
import io.heartgate.scheduler.table.ModelNames;
import io.heartgate.scheduler.table.Node;
import io.heartgate.scheduler.table.TableSnapshot;
import io.vertx.core.json.JsonArray;
import io.vertx.core.json.JsonObject;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * Answers the model catalogue calls itself, from the table, so that the fleet looks like one server:
 * {@code GET /v1/models} and {@code GET /v1/models/{model}} (OpenAI), {@code GET /api/tags} and
 * {@code GET /api/ps} (Ollama). Forwarded, each would return one node's list, a different one per
 * call, and a chat UI's model picker would show models appear and vanish. The lists are the union
 * over routable nodes, one entry per normalised name (the first node by id gives its spelling and
 * description); a node that lists no model (it serves any) adds none. No routable node: 503
 * {@code no_upstream}, as for any other request.
 */
final class Catalogue implements Stage {

    /** OpenAI's {@code owned_by}: the same for every model, whatever node serves it. */
    static final String OWNED_BY = "heartgate";

    private final Supplier<TableSnapshot> table;

    Catalogue(Supplier<TableSnapshot> table) {
        this.table = table;
    }

    @Override
    public void handle(Call call) {
        String method = call.method();
        Endpoint endpoint = call.endpoint();
        if (!(method.equals("GET") || method.equals("HEAD")) || endpoint.role() != Endpoint.Role.CATALOGUE) {
            call.proceed();
            return;
        }
        List<Node> nodes = table.get().routable();
        if (nodes.isEmpty()) {
            call.answer(Answer.error(ErrorType.NO_UPSTREAM, "no routable inference node"));
            return;
        }
        if (endpoint == Endpoint.OLLAMA_TAGS) {
            call.answer(json(tags(nodes)));
        } else if (endpoint == Endpoint.OLLAMA_PS) {
            call.answer(json(ps(nodes)));
        } else if (endpoint == Endpoint.OPENAI_MODEL) {
            String uri = call.uri();
            int q = uri.indexOf('?');
            String id = uri.substring(Endpoint.OPENAI_MODEL.path().length(), q < 0 ? uri.length() : q);
            String wanted = URLDecoder.decode(id, StandardCharsets.UTF_8);
            String name = names(nodes).get(ModelNames.normalize(wanted));
            call.answer(name == null ? Answer.error(ErrorType.MODEL_NOT_FOUND, "no routable node serves model '"
                    + wanted + "'") : json(openAiModel(name)));
        } else {
            JsonArray data = new JsonArray();
            names(nodes).values().forEach(name -> data.add(openAiModel(name)));
            call.answer(json(new JsonObject().put("object", "list").put("data", data)));
        }
    }

    private static Answer json(JsonObject body) {
        return new Answer(200, "application/json; charset=utf-8", body.toBuffer().getBytes(), null);
    }

    /** Returns every model the nodes list, by normalised name (sorted), spelled as the first node by id lists it. */
    static Map<String, String> names(List<Node> nodes) {
        Map<String, String> names = new TreeMap<>();
        for (Node n : nodes) {
            for (String m : n.heartbeat().models()) {
                names.putIfAbsent(ModelNames.normalize(m), m);
            }
        }
        return names;
    }

    private static JsonObject openAiModel(String name) {
        return new JsonObject().put("id", name).put("object", "model").put("created", 0).put("owned_by", OWNED_BY);
    }

    private static JsonObject tags(List<Node> nodes) {
        Map<String, ModelInfo> described = new LinkedHashMap<>();
        for (Node n : nodes) {
            for (ModelInfo m : n.heartbeat().modelInfo()) {
                described.putIfAbsent(ModelNames.normalize(m.name()), m);
            }
        }
        JsonArray models = new JsonArray();
        names(nodes).forEach((key, name) -> {
            ModelInfo info = described.get(key);
            JsonObject o = new JsonObject().put("name", name).put("model", name);
            if (info != null) {
                putIfSet(o, "modified_at", info.modifiedAt());
                if (info.size() != null) {
                    o.put("size", info.size());
                }
                putIfSet(o, "digest", info.digest());
                if (info.details() != null) {
                    o.put("details", details(info.details()));
                }
            }
            models.add(o);
        });
        return new JsonObject().put("models", models);
    }

    private static JsonObject ps(List<Node> nodes) {
        Map<String, LoadedModel> loaded = new TreeMap<>();
        Map<String, ModelInfo> described = new LinkedHashMap<>();
        for (Node n : nodes) {
            for (LoadedModel m : n.heartbeat().loaded()) {
                loaded.putIfAbsent(ModelNames.normalize(m.name()), m);
            }
            for (ModelInfo m : n.heartbeat().modelInfo()) {
                described.putIfAbsent(ModelNames.normalize(m.name()), m);
            }
        }
        JsonArray models = new JsonArray();
        loaded.forEach((key, m) -> {
            JsonObject o = new JsonObject().put("name", m.name()).put("model", m.name());
            if (m.size() != null) {
                o.put("size", m.size());
            }
            ModelInfo info = described.get(key);
            if (info != null) {
                putIfSet(o, "digest", info.digest());
                if (info.details() != null) {
                    o.put("details", details(info.details()));
                }
            }
            putIfSet(o, "expires_at", m.expiresAt());
            if (m.sizeVram() != null) {
                o.put("size_vram", m.sizeVram());
            }
            if (m.contextLength() != null) {
                o.put("context_length", m.contextLength());
            }
            models.add(o);
        });
        return new JsonObject().put("models", models);
    }

    private static JsonObject details(ModelInfo.Details d) {
        JsonObject o = new JsonObject();
        putIfSet(o, "parent_model", d.parentModel());
        putIfSet(o, "format", d.format());
        putIfSet(o, "family", d.family());
        if (!d.families().isEmpty()) {
            o.put("families", new JsonArray(d.families()));
        }
        putIfSet(o, "parameter_size", d.parameterSize());
        putIfSet(o, "quantization_level", d.quantizationLevel());
        return o;
    }

    private static void putIfSet(JsonObject o, String field, String value) {
        if (value != null) {
            o.put(field, value);
        }
    }
}

package io.heartgate.scheduler.proxy.stage;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.heartgate.scheduler.request.BodyJson;
import io.heartgate.scheduler.request.Endpoint;
import io.heartgate.scheduler.routing.ResponseHomes;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

/**
 * A request of OpenAI's Responses API that continues an earlier response
 * ({@code previous_response_id}), or reads, cancels or lists one ({@code /v1/responses/{id}} and
 * below), goes to the node that made that response, whatever the strategy:
 * vLLM keeps a response's state in the memory of the process that made it, and every other node
 * answers 404. The node is known when this scheduler relayed the response ({@link ResponseHomes});
 * an id it never saw, or one whose node is gone, is routed as any request is, and the node that
 * gets it says what is missing. Only that endpoint's bodies are read.
 */
final class ResponseFollowUp implements Stage {

    private static final JsonFactory JSON = BodyJson.FACTORY;
    private static final String FIELD = "previous_response_id";

    private final ResponseHomes homes;

    ResponseFollowUp(ResponseHomes homes) {
        this.homes = homes;
    }

    @Override
    public void handle(Call call) {
        Endpoint e = call.endpoint();
        if (e == Endpoint.OPENAI_RESPONSES && call.method().equals("POST") || e == Endpoint.OPENAI_RESPONSE) {
            String id = e == Endpoint.OPENAI_RESPONSE ? pathId(call.uri()) : previousId(call.body());
            String node = id == null ? null : homes.node(id);
            if (node != null) {
                call.facts(call.facts().withNode(node));
            }
        }
        call.proceed();
    }

    /** Returns the id in {@code /v1/responses/{id}}, {@code /v1/responses/{id}/cancel} or the like, or {@code null}. */
    static String pathId(String uri) {
        int from = Endpoint.OPENAI_RESPONSE.path().length();
        int to = from;
        while (to < uri.length() && uri.charAt(to) != '/' && uri.charAt(to) != '?') {
            to++;
        }
        try {
            return to == from ? null : URLDecoder.decode(uri.substring(from, to), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return null; // a broken escape: no id this scheduler relayed
        }
    }

    /**
     * Returns the top-level {@code previous_response_id} of {@code body} (the last, as the servers'
     * JSON parsers keep it), or {@code null} when it has none or is no JSON object.
     */
    static String previousId(byte[] body) {
        String id = null;
        try (JsonParser p = JSON.createParser(body)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return null;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                if (value.isStructStart()) {
                    p.skipChildren();
                } else if (field.equals(FIELD)) {
                    id = value == JsonToken.VALUE_STRING ? p.getText() : null;
                }
            }
        } catch (IOException e) {
            return id; // broken after the field: the node will reject the body
        }
        return id;
    }
}

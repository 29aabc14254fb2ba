package io.heartgate.agent.probe;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What Ollama's {@code /api/show} says of how a model's chat becomes a prompt, and what that means
 * for a partial answer: whether the model's chat continues a final assistant message
 * ({@link #prefill}), which the agent reports per model so that a stream cut on another node can
 * move here. Pure and thread-safe.
 *
 * @param template the Go template, as the server holds it, or {@code null} when it gave none
 * @param renderer the built-in renderer that replaces the template, or {@code null} when none
 */
public record OllamaShow(String template, String renderer) {

    private static final ObjectMapper JSON = new ObjectMapper();
    /** The modelfile line that names a model's renderer ({@code parser.Command.String}). */
    private static final Pattern MODELFILE_RENDERER = Pattern.compile("(?m)^RENDERER[ \\t]+(\\S+)[ \\t]*$");
    /** A Go template action, {@code {{ ... }}}, with its trim markers. */
    private static final Pattern ACTION = Pattern.compile("\\{\\{(.*?)}}", Pattern.DOTALL);
    /** {@code .Messages} or {@code $.Messages}, which Ollama's {@code Template.Vars} matches in any case. */
    private static final Pattern MESSAGES = Pattern.compile("\\.messages\\b", Pattern.CASE_INSENSITIVE);
    /** {@code not $last}: what a template tests to leave the last message's turn open. */
    private static final Pattern NOT_LAST = Pattern.compile("\\bnot\\s+\\$last\\b");
    /** The template Ollama shows for a model that has none ({@code template.DefaultTemplate}). */
    private static final String DEFAULT_TEMPLATE = "{{ .Prompt }}";

    /**
     * Reads an Ollama {@code /api/show} answer; {@code null} when it is not a JSON object. The renderer
     * is the answer's {@code renderer}, else the {@code RENDERER} line of its {@code modelfile}: the
     * {@code ShowResponse} type declares the field ({@code api/types.go}), but {@code GetModelInfo} in
     * {@code server/routes.go} (ollama v0.33.0-rc2) fills neither it nor {@code parser}, while the
     * modelfile it writes ({@code Model.String}, {@code server/images.go}) names both.
     */
    public static OllamaShow read(String json) {
        JsonNode show = parse(json);
        if (show == null || !show.isObject()) {
            return null;
        }
        String renderer = text(show, "renderer");
        if (renderer == null || renderer.isBlank()) {
            renderer = modelfileRenderer(text(show, "modelfile"));
        }
        return new OllamaShow(text(show, "template"), renderer);
    }

    /** Returns the body of an Ollama {@code /api/show} request for {@code model}. */
    public static String request(String model) {
        return JSON.createObjectNode().put("model", model).toString();
    }

    private static String modelfileRenderer(String modelfile) {
        if (modelfile == null) {
            return null;
        }
        Matcher m = MODELFILE_RENDERER.matcher(modelfile);
        return m.find() ? m.group(1) : null;
    }

    /**
     * Returns whether Ollama's {@code /api/chat} continues a final assistant message for a model with
     * this template and renderer ({@code true}), closes that turn and answers anew ({@code false}), or
     * {@code null} when they do not tell. Follows how ollama v0.33.0-rc2 builds a chat's prompt:
     * <ul>
     * <li>a renderer: {@code null}. {@code renderPrompt} ({@code server/prompt.go}) renders in Go code
     *     then, not with the template, and each renderer ({@code model/renderers/}) decides for itself.
     * <li>no template, or {@code {{ .Prompt }}}, the stand-in Ollama shows for a model without one
     *     ({@code template.DefaultTemplate}): {@code null}. Such a chat is rendered by the runner with
     *     the model's own chat template ({@code chatModeForModel}, {@code server/routes.go}).
     * <li>a template over {@code .Messages}: {@code true} when it tests {@code not $last}, as continuing
     *     templates do to leave out the end of turn after the last message (the qwen3 template in
     *     {@code thinking/template_test.go}: {@code {{ if not $last }}<|im_end|>}), else {@code false}.
     *     {@code Template.Execute} ({@code template/template.go}) renders such a template over all the
     *     messages as it is written, so one that ends every turn or opens a new one after the last
     *     ({@code template/chatml.gotmpl}; {@code gemma3-instruct.gotmpl}, whose {@code $last} only
     *     opens the model's turn) starts a new answer. Checked first, as {@code Execute} does: a
     *     template with both {@code .Messages} and {@code .Response} is rendered as a messages one.
     * <li>any other template (the legacy {@code .Prompt}/{@code .Response} kind): {@code true}.
     *     {@code Execute} renders the last exchange cut after {@code {{ .Response }}}, which
     *     {@code Parse} appends where a template lacks it, so the model goes on from the assistant's
     *     text.
     * </ul>
     * A template cannot show an Ollama that renders with the model's own chat template instead
     * ({@code OLLAMA_GO_TEMPLATE=0}, or {@code PreferChatTemplate} in {@code server/images.go}). A
     * messages template that leaves the last turn open without testing {@code not $last} is taken as
     * closing it: a node wrongly asked to continue glues a new answer onto the partial one, while one
     * wrongly passed over only costs the move.
     */
    public static Boolean prefill(String template, String renderer) {
        if (renderer != null && !renderer.isBlank()) {
            return null;
        }
        if (template == null || template.isBlank() || template.strip().equals(DEFAULT_TEMPLATE)) {
            return null;
        }
        boolean messages = false;
        boolean notLast = false;
        Matcher action = ACTION.matcher(template);
        while (action.find()) {
            String body = action.group(1);
            messages |= MESSAGES.matcher(body).find();
            notLast |= NOT_LAST.matcher(body).find();
        }
        return messages ? notLast : Boolean.TRUE;
    }

    private static JsonNode parse(String json) {
        try {
            return json == null ? null : JSON.readTree(json);
        } catch (JsonProcessingException e) {
            return null;
        }
    }

    private static String text(JsonNode parent, String field) {
        JsonNode v = parent.path(field);
        return v.isTextual() ? v.textValue() : null;
    }
}

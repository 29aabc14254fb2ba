package io.heartgate.scheduler.request;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.Locale;
import java.util.Set;

/**
 * Reads a JSON value as the OpenAI-compatible servers read a boolean field such as {@code stream}:
 * vLLM and SGLang validate requests with pydantic in its default (lax) mode, which takes {@code 1},
 * {@code 1.0} and strings such as {@code "true"} or {@code "yes"} for {@code true}. Reading them so
 * here keeps a request from streaming on the node while the proxy takes it for a whole answer (and
 * {@code --force-usage} leaves it uncounted). Values pydantic refuses are {@code null}: the node
 * answers them 400.
 */
public final class JsonFlags {

    private static final Set<String> TRUE = Set.of("1", "on", "t", "true", "y", "yes");
    private static final Set<String> FALSE = Set.of("0", "off", "f", "false", "n", "no");

    private JsonFlags() {
    }

    /** Returns the flag the parser's current value (of type {@code value}) stands for, or {@code null}. */
    public static Boolean read(JsonParser p, JsonToken value) throws IOException {
        if (value == null) {
            return null;
        }
        switch (value) {
            case VALUE_TRUE:
                return Boolean.TRUE;
            case VALUE_FALSE:
                return Boolean.FALSE;
            case VALUE_NUMBER_INT:
            case VALUE_NUMBER_FLOAT: {
                String n = p.getText();
                double d;
                try {
                    d = Double.parseDouble(n);
                } catch (NumberFormatException e) {
                    return null;
                }
                return d == 1 ? Boolean.TRUE : d == 0 ? Boolean.FALSE : null;
            }
            case VALUE_STRING: {
                String s = p.getText();
                if (s.length() > 5) {
                    return null;
                }
                String lower = s.toLowerCase(Locale.ROOT);
                return TRUE.contains(lower) ? Boolean.TRUE : FALSE.contains(lower) ? Boolean.FALSE : null;
            }
            default:
                return null;
        }
    }
}

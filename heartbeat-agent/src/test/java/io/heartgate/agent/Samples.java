package io.heartgate.agent;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/** Reads the recorded real-world payloads under {@code src/test/resources/samples} (see its SOURCES.md). */
public final class Samples {

    private Samples() {
    }

    public static String read(String name) {
        try (InputStream in = Samples.class.getResourceAsStream("/samples/" + name)) {
            if (in == null) {
                throw new IllegalArgumentException("no sample " + name);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

package io.heartgate.protocol;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.zip.GZIPInputStream;

/** Reads golden heartbeat fixtures from the test classpath, unzipping {@code .gz} files. */
final class Fixtures {

    private Fixtures() {
    }

    static byte[] read(String path) {
        try (InputStream raw = Fixtures.class.getResourceAsStream("/heartbeats/" + path)) {
            if (raw == null) {
                throw new IllegalArgumentException("no fixture " + path);
            }
            try (InputStream in = path.endsWith(".gz") ? new GZIPInputStream(raw) : raw) {
                return in.readAllBytes();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}

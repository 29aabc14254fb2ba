package io.heartgate.scheduler.trust;

import io.heartgate.protocol.InvalidSettingException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A value read from files that an operator may change while the scheduler runs (the API keys, the
 * TLS certificate): {@link #get()} is one volatile read, and {@link #check()} reads the files again
 * and swaps in the new value when their bytes changed and it parses. A change that does not parse
 * keeps the value in use, with one warning; a request never sees a half-read file. Files are
 * compared by content rather than by modification time, so a Kubernetes secret's symlink swap and an
 * edit within the same second are both seen. Thread-safe; {@link #check()} is called from one thread.
 *
 * @param <T> the parsed value
 */
public final class Reloading<T> implements Supplier<T> {

    private static final Logger log = LoggerFactory.getLogger(Reloading.class);

    private final String what;
    private final List<Path> files;
    private final Function<List<byte[]>, T> parse;
    private final List<Consumer<T>> listeners = new CopyOnWriteArrayList<>();
    private volatile T current;
    private List<byte[]> lastRead;
    private List<byte[]> lastRejected;

    private Reloading(String what, List<Path> files, Function<List<byte[]>, T> parse, T first, List<byte[]> read) {
        this.what = what;
        this.files = files;
        this.parse = parse;
        this.current = first;
        this.lastRead = read;
    }

    /**
     * Reads {@code files} and parses them, as at start: a failure is thrown, not logged.
     *
     * @param what what the files hold, for log lines ({@code "API keys"})
     * @param setting the setting named when a file cannot be read
     * @throws InvalidSettingException when a file cannot be read or {@code parse} refuses it
     */
    public static <T> Reloading<T> load(String what, String setting, List<Path> files, Function<List<byte[]>, T> parse) {
        List<byte[]> read;
        try {
            read = read(files);
        } catch (IOException e) {
            throw new InvalidSettingException(setting, "cannot read " + e.getMessage());
        }
        return new Reloading<>(what, List.copyOf(files), parse, parse.apply(read), read);
    }

    @Override
    public T get() {
        return current;
    }

    /** Calls {@code listener} with each new value after it is in use (on the checking thread). */
    public void onChange(Consumer<T> listener) {
        listeners.add(listener);
    }

    /** Reads the files again; returns whether a new value is now in use. */
    public boolean check() {
        List<byte[]> read;
        try {
            read = read(files);
        } catch (IOException e) {
            if (lastRejected == null) {
                log.warn("{} not reloaded: cannot read {}; keeping the ones in use", what, e.getMessage());
                lastRejected = List.of();
            }
            return false;
        }
        if (same(read, lastRead) || same(read, lastRejected)) {
            return false;
        }
        T next;
        try {
            next = parse.apply(read);
        } catch (RuntimeException e) {
            lastRejected = read;
            log.warn("{} not reloaded from {}: {}; keeping the ones in use", what, files,
                    e instanceof InvalidSettingException ise ? ise.problem() : e.toString());
            return false;
        }
        current = next;
        lastRead = read;
        lastRejected = null;
        log.info("{} reloaded from {}: {}", what, files, next);
        for (Consumer<T> l : listeners) {
            try {
                l.accept(next);
            } catch (RuntimeException e) {
                log.warn("Applying the reloaded {} failed: {}", what, e.toString());
            }
        }
        return true;
    }

    private static List<byte[]> read(List<Path> files) throws IOException {
        List<byte[]> read = new ArrayList<>(files.size());
        for (Path f : files) {
            try {
                read.add(Files.readAllBytes(f));
            } catch (IOException | RuntimeException e) {
                throw new IOException(f + ": " + e, e);
            }
        }
        return read;
    }

    private static boolean same(List<byte[]> a, List<byte[]> b) {
        if (b == null || a.size() != b.size()) {
            return false;
        }
        for (int i = 0; i < a.size(); i++) {
            if (!Arrays.equals(a.get(i), b.get(i))) {
                return false;
            }
        }
        return true;
    }
}

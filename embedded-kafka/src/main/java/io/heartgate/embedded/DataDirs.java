package io.heartgate.embedded;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Removes a broker's temp data dir when it is closed; a failure is a warning, never an exception. */
final class DataDirs {

    private static final Logger log = LoggerFactory.getLogger(EmbeddedKafkaBroker.class);

    private DataDirs() {
    }

    /** Deletes {@code dir} and everything in it; nothing when it is absent. */
    static void delete(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try {
            Files.walkFileTree(dir, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                    Files.deleteIfExists(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                    Files.deleteIfExists(d);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            log.warn("Could not remove the embedded Kafka dir {}: {}", dir, e.toString());
        }
    }
}

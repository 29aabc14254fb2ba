package io.heartgate.embedded;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Set;

/** Writes files that hold secrets (keys, passwords) so that only their owner can read them. */
final class OwnerOnlyFiles {

    private static final Set<PosixFilePermission> OWNER_RW = PosixFilePermissions.fromString("rw-------");

    private OwnerOnlyFiles() {
    }

    /**
     * Replaces the content of {@code file}, restricting it to {@code rw-------} before a byte is written
     * where the file system has POSIX permissions; elsewhere it is written with the defaults.
     */
    static void write(Path file, byte[] content) throws IOException {
        if (file.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            if (Files.exists(file)) {
                Files.setPosixFilePermissions(file, OWNER_RW);
            } else {
                Files.createFile(file, PosixFilePermissions.asFileAttribute(OWNER_RW));
            }
        }
        Files.write(file, content, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE);
    }
}

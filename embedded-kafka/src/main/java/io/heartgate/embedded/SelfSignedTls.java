package io.heartgate.embedded;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Makes a self-signed TLS certificate and its private key as PEM files, for servers that need TLS
 * without a certificate authority: the embedded broker's SASL_SSL listener, and HTTPS servers in tests.
 *
 * <p>The JDK's own {@code keytool} makes the key pair, so no crypto library is needed. The certificate
 * (EC P-256, SHA-256, valid ten years) names every given host in its subject alternative names, as an IP
 * address or a DNS name; clients trust it by trusting the certificate file itself. The key is unencrypted
 * PKCS#8 ({@code BEGIN PRIVATE KEY}), which Kafka's PEM key store, Netty and Vert.x read, and is written
 * readable by its owner only. Safe to call from several threads as long as they use different directories.
 */
public final class SelfSignedTls {

    private static final Logger log = LoggerFactory.getLogger(SelfSignedTls.class);

    static final String CERTIFICATE_FILE = "cert.pem";
    static final String KEY_FILE = "key.pem";
    private static final String ALIAS = "heartgate";
    private static final String PASSWORD_ENV = "HEARTGATE_KEYTOOL_PASS";
    private static final long KEYTOOL_TIMEOUT_S = 60;
    private static final Pattern HOST = Pattern.compile("[A-Za-z0-9._:-]+");
    private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");
    private static final int SAN_DNS = 2;
    private static final int SAN_IP = 7;

    private SelfSignedTls() {
    }

    /**
     * Names the two PEM files of a certificate and its key.
     *
     * @param certificate the certificate, {@code BEGIN CERTIFICATE}; also what clients trust
     * @param privateKey the unencrypted PKCS#8 private key, {@code BEGIN PRIVATE KEY}
     */
    public record PemFiles(Path certificate, Path privateKey) {

        /** Checks that both are given. */
        public PemFiles {
            Objects.requireNonNull(certificate, "certificate");
            Objects.requireNonNull(privateKey, "privateKey");
        }
    }

    /**
     * Writes a new certificate for {@code hosts} and its key as {@code cert.pem} and {@code key.pem} in
     * {@code dir}, replacing any there.
     *
     * @param dir created if missing
     * @param hosts host names or IP literals, at least one; the first is also the subject's common name
     * @throws IllegalArgumentException when a host is empty or has characters no host name has
     * @throws IllegalStateException when keytool fails; the message carries its output
     */
    public static PemFiles generate(Path dir, Collection<String> hosts) {
        List<String> names = checkedHosts(hosts);
        byte[] secret = new byte[16];
        new SecureRandom().nextBytes(secret);
        String password = HexFormat.of().formatHex(secret);
        String tag = HexFormat.of().formatHex(secret, 0, 4);
        Path keystore = dir.resolve("keytool-" + tag + ".p12");
        Path output = dir.resolve("keytool-" + tag + ".out");
        try {
            Files.createDirectories(dir);
            runKeytool(keystore, output, password, names);
            KeyStore ks = KeyStore.getInstance("PKCS12");
            try (InputStream in = Files.newInputStream(keystore)) {
                ks.load(in, password.toCharArray());
            }
            PrivateKey key = (PrivateKey) ks.getKey(ALIAS, password.toCharArray());
            Certificate certificate = ks.getCertificate(ALIAS);
            PemFiles files = new PemFiles(dir.resolve(CERTIFICATE_FILE), dir.resolve(KEY_FILE));
            OwnerOnlyFiles.write(files.privateKey(), pem("PRIVATE KEY", key.getEncoded()));
            Files.write(files.certificate(), pem("CERTIFICATE", certificate.getEncoded()));
            return files;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write a self-signed certificate in " + dir, e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("cannot read the key pair keytool made", e);
        } finally {
            deleteQuietly(keystore);
            deleteQuietly(output);
        }
    }

    /**
     * Returns the certificate and key already in {@code dir} when the certificate names every one of
     * {@code hosts}; otherwise {@link #generate generates} new ones. This is what keeps a broker's
     * certificate the same across restarts on one data dir.
     *
     * @throws IllegalArgumentException as {@link #generate}
     * @throws IllegalStateException as {@link #generate}
     */
    public static PemFiles reuseOrGenerate(Path dir, Collection<String> hosts) {
        List<String> names = checkedHosts(hosts);
        PemFiles existing = new PemFiles(dir.resolve(CERTIFICATE_FILE), dir.resolve(KEY_FILE));
        if (Files.isRegularFile(existing.privateKey()) && covers(existing.certificate(), names)) {
            return existing;
        }
        return generate(dir, names);
    }

    /** Returns whether the certificate in {@code file} can be read and names every host; false if not. */
    static boolean covers(Path file, Collection<String> hosts) {
        if (!Files.isRegularFile(file)) {
            return false;
        }
        try (InputStream in = Files.newInputStream(file)) {
            X509Certificate cert = (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
            Set<String> dns = new LinkedHashSet<>();
            Set<InetAddress> ips = new LinkedHashSet<>();
            Collection<List<?>> sans = cert.getSubjectAlternativeNames();
            for (List<?> san : sans == null ? List.<List<?>>of() : sans) {
                int type = (Integer) san.get(0);
                if (type == SAN_DNS) {
                    dns.add(((String) san.get(1)).toLowerCase(Locale.ROOT));
                } else if (type == SAN_IP) {
                    ips.add(InetAddress.getByName((String) san.get(1)));
                }
            }
            for (String host : hosts) {
                boolean named = isIpLiteral(host)
                        ? ips.contains(InetAddress.getByName(host))
                        : dns.contains(host.toLowerCase(Locale.ROOT));
                if (!named) {
                    return false;
                }
            }
            return true;
        } catch (IOException | GeneralSecurityException | RuntimeException e) {
            // An unreadable or foreign file is simply not reusable: a fresh certificate replaces it.
            log.debug("Certificate {} is not reusable: {}", file, e.toString());
            return false;
        }
    }

    private static void runKeytool(Path keystore, Path output, String password, List<String> hosts)
            throws IOException {
        List<String> san = new ArrayList<>();
        for (String host : hosts) {
            san.add((isIpLiteral(host) ? "ip:" : "dns:") + host);
        }
        List<String> command = List.of(
                Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-genkeypair", "-noprompt",
                "-alias", ALIAS,
                // EC rather than RSA: keytool makes the key pair in a fraction of the time.
                "-keyalg", "EC", "-groupname", "secp256r1", "-sigalg", "SHA256withECDSA",
                "-validity", "3650",
                "-dname", "CN=" + hosts.get(0),
                "-ext", "SAN=" + String.join(",", san),
                "-ext", "EKU=serverAuth,clientAuth",
                "-storetype", "PKCS12",
                "-keystore", keystore.toString(),
                // From the environment, so that the password is not on a command line anyone can list.
                "-storepass:env", PASSWORD_ENV,
                "-keypass:env", PASSWORD_ENV);
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile());
        pb.environment().put(PASSWORD_ENV, password);
        pb.environment().remove("JAVA_TOOL_OPTIONS");
        Process process = pb.start();
        process.getOutputStream().close();
        try {
            if (!process.waitFor(KEYTOOL_TIMEOUT_S, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException("keytool did not finish within " + KEYTOOL_TIMEOUT_S + " s");
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while keytool ran", e);
        }
        if (process.exitValue() != 0 || !Files.exists(keystore)) {
            throw new IllegalStateException("keytool failed with status " + process.exitValue() + ": "
                    + Files.readString(output, StandardCharsets.UTF_8).trim());
        }
    }

    private static List<String> checkedHosts(Collection<String> hosts) {
        Objects.requireNonNull(hosts, "hosts");
        List<String> names = List.copyOf(new LinkedHashSet<>(hosts));
        if (names.isEmpty()) {
            throw new IllegalArgumentException("at least one host is needed");
        }
        for (String host : names) {
            if (!HOST.matcher(host).matches()) {
                throw new IllegalArgumentException("not a host name or IP literal: '" + host + "'");
            }
        }
        return names;
    }

    static boolean isIpLiteral(String host) {
        return IPV4.matcher(host).matches() || host.contains(":");
    }

    private static byte[] pem(String type, byte[] der) {
        String body = Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der);
        return ("-----BEGIN " + type + "-----\n" + body + "\n-----END " + type + "-----\n")
                .getBytes(StandardCharsets.US_ASCII);
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            // A leftover temp file in the caller's dir is harmless; the next generate uses another name.
            log.debug("Could not remove {}: {}", file, e.toString());
        }
    }
}

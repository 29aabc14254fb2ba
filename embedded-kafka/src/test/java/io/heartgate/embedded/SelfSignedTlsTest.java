package io.heartgate.embedded;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SelfSignedTlsTest {

    @Test
    void makesACertificateNamingEveryHostAndAMatchingPkcs8Key(@TempDir Path dir) throws Exception {
        SelfSignedTls.PemFiles files = SelfSignedTls.generate(dir.resolve("tls"),
                List.of("broker.example", "localhost", "127.0.0.1"));

        X509Certificate cert;
        try (InputStream in = Files.newInputStream(files.certificate())) {
            cert = (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(in);
        }
        List<Object> names = new ArrayList<>();
        cert.getSubjectAlternativeNames().forEach(san -> names.add(san.get(1)));
        assertThat(names).containsExactlyInAnyOrder("broker.example", "localhost", "127.0.0.1");
        assertThat(cert.getSubjectX500Principal().getName()).isEqualTo("CN=broker.example");

        String pem = Files.readString(files.privateKey(), StandardCharsets.US_ASCII);
        assertThat(pem).startsWith("-----BEGIN PRIVATE KEY-----\n").endsWith("-----END PRIVATE KEY-----\n");
        byte[] der = Base64.getMimeDecoder().decode(pem.replaceAll("-----[A-Z ]+-----", ""));
        PrivateKey key = KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(der));
        Signature signer = Signature.getInstance("SHA256withECDSA");
        signer.initSign(key);
        signer.update(new byte[] {1, 2, 3});
        byte[] signature = signer.sign();
        Signature verifier = Signature.getInstance("SHA256withECDSA");
        verifier.initVerify(cert.getPublicKey());
        verifier.update(new byte[] {1, 2, 3});
        assertThat(verifier.verify(signature)).as("the key belongs to the certificate").isTrue();

        if (dir.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(files.privateKey())))
                    .isEqualTo("rw-------");
        }
        try (var left = Files.list(files.certificate().getParent())) {
            assertThat(left.map(p -> p.getFileName().toString())).containsExactlyInAnyOrder("cert.pem", "key.pem");
        }
    }

    @Test
    void reusesItsCertificateUntilAHostIsMissing(@TempDir Path dir) throws Exception {
        SelfSignedTls.PemFiles first = SelfSignedTls.reuseOrGenerate(dir, List.of("localhost", "127.0.0.1"));
        byte[] original = Files.readAllBytes(first.certificate());

        SelfSignedTls.PemFiles again = SelfSignedTls.reuseOrGenerate(dir, List.of("127.0.0.1"));
        assertThat(again).isEqualTo(first);
        assertThat(Files.readAllBytes(again.certificate())).isEqualTo(original);

        SelfSignedTls.reuseOrGenerate(dir, List.of("localhost", "10.0.0.7"));
        assertThat(SelfSignedTls.covers(first.certificate(), List.of("localhost", "10.0.0.7"))).isTrue();
        assertThat(Files.readAllBytes(first.certificate())).isNotEqualTo(original);
    }

    @Test
    void rejectsWhatIsNoHostName(@TempDir Path dir) {
        assertThatThrownBy(() -> SelfSignedTls.generate(dir, List.of())).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> SelfSignedTls.generate(dir, List.of("a,dns:evil")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(SelfSignedTls.covers(dir.resolve("missing.pem"), List.of("localhost"))).isFalse();
    }
}

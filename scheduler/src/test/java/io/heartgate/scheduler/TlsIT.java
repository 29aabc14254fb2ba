package io.heartgate.scheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.heartgate.embedded.SelfSignedTls;
import io.heartgate.scheduler.config.SecurityConfig;
import io.heartgate.testkit.KafkaExtension;
import io.heartgate.testkit.TestKafka;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.List;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** HTTPS on both ports: ALPN settles on HTTP/1.1, and a renewed certificate is served without a restart. */
@ExtendWith(KafkaExtension.class)
class TlsIT {

    @TempDir
    Path dir;

    private Cluster cluster;
    private SelfSignedTls.PemFiles served;

    @BeforeEach
    void setUp(TestKafka kafka) throws Exception {
        cluster = new Cluster(kafka.bootstrapServers());
        SelfSignedTls.PemFiles first = SelfSignedTls.generate(dir.resolve("first"), List.of("127.0.0.1", "localhost"));
        served = new SelfSignedTls.PemFiles(dir.resolve("tls.crt"), dir.resolve("tls.key"));
        Files.copy(first.certificate(), served.certificate());
        Files.copy(first.privateKey(), served.privateKey());
        Cluster.SimNode sim = cluster.sim("gpu-a", c -> c);
        cluster.heartbeat("gpu-a", sim.url(), b -> b.models(List.of("llama3:8b")));
        cluster.startScheduler(c -> c.security(new SecurityConfig(null, null, null, false, null,
                served.certificate(), served.privateKey(), null, null)));
        cluster.awaitRoutable(1);
    }

    @AfterEach
    void tearDown() throws Exception {
        cluster.close();
    }

    private static SSLContext trusting(Path certificate) throws Exception {
        KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
        trust.load(null, null);
        try (InputStream in = Files.newInputStream(certificate)) {
            trust.setCertificateEntry("scheduler", CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
    }

    /** Opens a TLS connection offering h2 and http/1.1; returns the protocol chosen and the certificate served. */
    private static Object[] handshake(int port, SSLContext ctx) throws Exception {
        try (SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket(InetAddress.getLoopbackAddress(), port)) {
            s.setSoTimeout(5_000);
            SSLParameters p = s.getSSLParameters();
            p.setApplicationProtocols(new String[] {"h2", "http/1.1"});
            p.setEndpointIdentificationAlgorithm("HTTPS");
            s.setSSLParameters(p);
            s.startHandshake();
            Certificate[] chain = s.getSession().getPeerCertificates();
            return new Object[] {s.getApplicationProtocol(), chain[0]};
        }
    }

    private static Certificate certificate(Path pem) throws Exception {
        try (InputStream in = Files.newInputStream(pem)) {
            return CertificateFactory.getInstance("X.509").generateCertificate(in);
        }
    }

    @Test
    void bothPortsServeHttpsOverHttp11AndPickUpARenewedCertificate() throws Exception {
        SSLContext ctx = trusting(served.certificate());
        HttpClient https = HttpClient.newBuilder().sslContext(ctx).connectTimeout(Duration.ofSeconds(5)).build();
        HttpResponse<String> chat = https.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:"
                        + cluster.scheduler.proxyPort() + "/v1/chat/completions"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"llama3:8b\",\"messages\":[]}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(chat.statusCode()).isEqualTo(200);
        assertThat(chat.version()).isEqualTo(HttpClient.Version.HTTP_1_1);
        assertThat(https.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:" + cluster.scheduler.adminPort()
                + "/admin/nodes")).build(), HttpResponse.BodyHandlers.ofString()).body()).contains("gpu-a");
        for (int port : new int[] {cluster.scheduler.proxyPort(), cluster.scheduler.adminPort()}) {
            assertThat(handshake(port, ctx)[0]).as("ALPN on port %d", port).isEqualTo("http/1.1");
        }

        // Renewed in place, as cert-manager does: new connections get the new certificate.
        SelfSignedTls.PemFiles renewed = SelfSignedTls.generate(dir.resolve("renewed"), List.of("127.0.0.1", "localhost"));
        Files.copy(renewed.privateKey(), served.privateKey(), StandardCopyOption.REPLACE_EXISTING);
        Files.copy(renewed.certificate(), served.certificate(), StandardCopyOption.REPLACE_EXISTING);
        SSLContext renewedCtx = trusting(renewed.certificate());
        Certificate expected = certificate(renewed.certificate());
        for (int port : new int[] {cluster.scheduler.proxyPort(), cluster.scheduler.adminPort()}) {
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(200)).ignoreException(
                    SSLHandshakeException.class).until(() -> handshake(port, renewedCtx)[1].equals(expected));
        }
        HttpClient renewedClient = HttpClient.newBuilder().sslContext(renewedCtx).build();
        assertThat(renewedClient.send(HttpRequest.newBuilder(URI.create("https://127.0.0.1:"
                        + cluster.scheduler.proxyPort() + "/v1/chat/completions"))
                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"llama3:8b\",\"messages\":[]}")).build(),
                HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
    }

    @Test
    void plainHttpToTheTlsPortGetsNoAnswer() throws Exception {
        HttpClient plain = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
        Assertions.assertThatThrownBy(() -> plain.send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + cluster.scheduler.proxyPort() + "/v1/models"))
                        .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString()))
                .isInstanceOf(IOException.class);
    }
}

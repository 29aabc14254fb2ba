package io.heartgate.scheduler.trust;

import io.heartgate.protocol.InvalidSettingException;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Instant;
import java.util.List;

/**
 * The certificate and key both HTTP ports serve when {@code --tls-cert} and {@code --tls-key} are
 * set: PEM files, the chain leaf first and the key in PKCS#8 ({@code BEGIN PRIVATE KEY}). HTTP/1.1
 * only, offered by ALPN so that clients that ask for h2 settle on it at once. Immutable; a renewed
 * certificate is a new instance ({@link Reloading}).
 *
 * @param proxy the proxy's TLS context (Netty)
 * @param certPem the chain's PEM bytes, for the admin port (Vert.x)
 * @param keyPem the key's PEM bytes, for the admin port
 * @param subject the leaf certificate's subject, for logs
 * @param notAfter when the leaf certificate expires
 */
public record ServerTls(SslContext proxy, byte[] certPem, byte[] keyPem, String subject, Instant notAfter) {

    /**
     * Parses {@code files}: the certificate chain, then the key.
     *
     * @throws InvalidSettingException for {@code tlsCert} or {@code tlsKey}, saying what is wrong
     */
    public static ServerTls parse(List<byte[]> files) {
        byte[] cert = files.get(0);
        byte[] key = files.get(1);
        X509Certificate leaf;
        try {
            var certs = CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(cert));
            if (certs.isEmpty()) {
                throw new InvalidSettingException("tlsCert", "holds no PEM certificate");
            }
            leaf = (X509Certificate) certs.iterator().next();
        } catch (CertificateException e) {
            throw new InvalidSettingException("tlsCert", "is not a PEM certificate chain: " + e.getMessage());
        }
        String keyText = new String(key, StandardCharsets.US_ASCII);
        if (keyText.contains("BEGIN RSA PRIVATE KEY") || keyText.contains("BEGIN EC PRIVATE KEY")) {
            throw new InvalidSettingException("tlsKey", "is a PKCS#1/SEC1 key; convert it to PKCS#8 with "
                    + "'openssl pkcs8 -topk8 -nocrypt -in KEY -out KEY.pk8'");
        }
        if (!matches(leaf, keyText)) {
            throw new InvalidSettingException("tlsKey", "does not match the certificate of --tls-cert (or is not "
                    + "an unencrypted PKCS#8 PEM key)");
        }
        SslContext context;
        try {
            context = SslContextBuilder.forServer(new ByteArrayInputStream(cert), new ByteArrayInputStream(key))
                    .applicationProtocolConfig(new ApplicationProtocolConfig(ApplicationProtocolConfig.Protocol.ALPN,
                            ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
                            ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
                            ApplicationProtocolNames.HTTP_1_1))
                    .build();
        } catch (Exception e) {
            throw new InvalidSettingException("tlsKey", "cannot be used with the certificate (a PKCS#8 PEM key "
                    + "matching the leaf certificate is needed): " + e.getMessage());
        }
        return new ServerTls(context, cert, key, leaf.getSubjectX500Principal().getName(), leaf.getNotAfter().toInstant());
    }

    /** Returns whether {@code pkcs8Pem} is the private key of {@code leaf}: it signs what the certificate's key verifies. */
    private static boolean matches(X509Certificate leaf, String pkcs8Pem) {
        int begin = pkcs8Pem.indexOf("-----BEGIN PRIVATE KEY-----");
        int end = pkcs8Pem.indexOf("-----END PRIVATE KEY-----");
        if (begin < 0 || end < begin) {
            return false;
        }
        try {
            byte[] der = Base64.getMimeDecoder().decode(pkcs8Pem.substring(begin + 27, end));
            PublicKey pub = leaf.getPublicKey();
            PrivateKey key = KeyFactory.getInstance(pub.getAlgorithm()).generatePrivate(new PKCS8EncodedKeySpec(der));
            String algorithm = switch (pub.getAlgorithm()) {
                case "EC" -> "SHA256withECDSA";
                case "RSA" -> "SHA256withRSA";
                case "Ed25519", "EdDSA" -> "Ed25519";
                default -> null;
            };
            if (algorithm == null) {
                return true; // a key type we cannot test here: the handshake will tell
            }
            byte[] probe = "heartgate-tls-key-check".getBytes(StandardCharsets.US_ASCII);
            Signature sign = Signature.getInstance(algorithm);
            sign.initSign(key);
            sign.update(probe);
            byte[] signature = sign.sign();
            Signature verify = Signature.getInstance(algorithm);
            verify.initVerify(pub);
            verify.update(probe);
            return verify.verify(signature);
        } catch (GeneralSecurityException | IllegalArgumentException e) {
            return false;
        }
    }

    @Override
    public String toString() {
        return "certificate " + subject + ", valid until " + notAfter;
    }
}

package io.heartgate.protocol.signing;

import static io.heartgate.protocol.signing.HeartbeatKeysTest.SECRET_A;
import static io.heartgate.protocol.signing.HeartbeatKeysTest.SECRET_B;
import static org.assertj.core.api.Assertions.assertThat;

import io.heartgate.protocol.Heartbeat;
import io.heartgate.protocol.HeartbeatCodec;
import io.heartgate.protocol.Rule;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.jupiter.api.Test;

class HeartbeatVerifierTest {

    private static final String SECRET_C = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0";

    private static final HeartbeatKeys AGENT = HeartbeatKeys.parse("new " + SECRET_A + "\n");
    private static final HeartbeatKeys OLD_AGENT = HeartbeatKeys.parse("old " + SECRET_B + "\n");
    private static final HeartbeatKeys SCHEDULER = HeartbeatKeys.parse("old " + SECRET_B + "\nnew " + SECRET_A + "\n");

    private final byte[] key = bytes("gpu-a");
    private final byte[] value = new HeartbeatCodec().encode(
            Heartbeat.builder("gpu-a", "http://10.0.0.5:11434").seq(42L).models(List.of("llama3:8b")).build());
    private final HeartbeatVerifier verifier = new HeartbeatVerifier(SCHEDULER);

    @Test
    void verifiesWhatTheSignerSigned() {
        Signature s = new HeartbeatSigner(AGENT).sign(key, value);

        assertThat(s.keyId()).isEqualTo("new");
        assertThat(s.keyIdHeader()).isEqualTo(bytes("new"));
        assertThat(s.signatureHeader()).hasSize(64);
        assertThat(new String(s.signatureHeader(), StandardCharsets.US_ASCII)).matches("[0-9a-f]{64}");
        assertThat(verify(key, value, s)).isEqualTo(new Verification.Verified("new"));
    }

    @Test
    void verifiesASignedTombstoneWithItsTombstoneHeader() {
        byte[] info = bytes("i-42 1764583200000");
        Signature s = new HeartbeatSigner(AGENT).signTombstone(key, info);
        HeartbeatVerifier verifier = new HeartbeatVerifier(SCHEDULER);

        assertThat(verifier.verify(key, null, s.keyIdHeader(), s.signatureHeader(), info).isVerified()).isTrue();
        assertThat(rule(verifier.verify(key, null, s.keyIdHeader(), s.signatureHeader(), bytes("i-42 1764583299999"))))
                .as("a refreshed time").isEqualTo(Rule.BAD_SIGNATURE);
        assertThat(rule(verifier.verify(key, null, s.keyIdHeader(), s.signatureHeader(), null)))
                .as("a tombstone without its header").isEqualTo(Rule.UNSIGNED);
        assertThat(rule(verifier.verify(key, value, s.keyIdHeader(), s.signatureHeader(), info)))
                .isEqualTo(Rule.BAD_SIGNATURE);
        Signature old = new HeartbeatSigner(AGENT).sign(key, null); // the first layout: no header at all
        assertThat(rule(verifier.verify(key, null, old.keyIdHeader(), old.signatureHeader(), null)))
                .isEqualTo(Rule.UNSIGNED);
    }

    @Test
    void signsANullValueAndAnEmptyValueDifferently() {
        HeartbeatSigner signer = new HeartbeatSigner(AGENT);

        assertThat(signer.sign(key, null).signatureHeader()).isNotEqualTo(signer.sign(key, new byte[0]).signatureHeader());
        assertThat(rule(verify(key, new byte[0], signer.sign(key, null)))).isEqualTo(Rule.BAD_SIGNATURE);
        assertThat(rule(new HeartbeatVerifier(SCHEDULER).verify(key, null, signer.sign(key, new byte[0]).keyIdHeader(),
                signer.sign(key, new byte[0]).signatureHeader(), new byte[0]))).isEqualTo(Rule.BAD_SIGNATURE);
    }

    @Test
    void signsTheSameRecordTheSameWayEveryTime() {
        HeartbeatSigner signer = new HeartbeatSigner(AGENT);

        assertThat(signer.sign(key, value).signatureHeader()).isEqualTo(signer.sign(key, value).signatureHeader());
    }

    @Test
    void separatesKeyAndValueByTheirLengths() {
        // Without length prefixes, key "gpu-a" + value "b" and key "gpu-ab" + empty value would share an input.
        HeartbeatSigner signer = new HeartbeatSigner(AGENT);

        assertThat(signer.sign(bytes("gpu-a"), bytes("b")).signatureHeader())
                .isNotEqualTo(signer.sign(bytes("gpu-ab"), new byte[0]).signatureHeader());
    }

    @Test
    void refusesARecordWithoutEitherHeaderAsUnsigned() {
        Signature s = new HeartbeatSigner(AGENT).sign(key, value);

        assertThat(rule(verifier.verify(key, value, null, null))).isEqualTo(Rule.UNSIGNED);
        assertThat(rule(verifier.verify(key, value, s.keyIdHeader(), null))).isEqualTo(Rule.UNSIGNED);
        assertThat(rule(verifier.verify(key, value, null, s.signatureHeader()))).isEqualTo(Rule.UNSIGNED);
    }

    @Test
    void refusesAKeyIdItDoesNotHave() {
        Signature s = new HeartbeatSigner(HeartbeatKeys.parse("other " + SECRET_C)).sign(key, value);

        assertThat(rule(verify(key, value, s))).isEqualTo(Rule.UNKNOWN_KEY);
        assertThat(rule(verifier.verify(key, value, new byte[0], s.signatureHeader()))).isEqualTo(Rule.UNKNOWN_KEY);
    }

    @Test
    void refusesATamperedValueKeyOrKeyId() {
        Signature s = new HeartbeatSigner(AGENT).sign(key, value);
        byte[] tampered = value.clone();
        tampered[tampered.length / 2] ^= 1;

        assertThat(rule(verify(key, tampered, s))).isEqualTo(Rule.BAD_SIGNATURE);
        assertThat(rule(verify(bytes("gpu-b"), value, s))).isEqualTo(Rule.BAD_SIGNATURE);
        // The same secret under another id still fails: the key id is inside the MAC.
        HeartbeatVerifier sameSecretTwoIds = new HeartbeatVerifier(HeartbeatKeys.parse("new " + SECRET_A + "\nalias " + SECRET_A));
        assertThat(rule(sameSecretTwoIds.verify(key, value, bytes("alias"), s.signatureHeader()))).isEqualTo(Rule.BAD_SIGNATURE);
    }

    @Test
    void refusesAMalformedSignatureAsBad() {
        Signature s = new HeartbeatSigner(AGENT).sign(key, value);
        byte[] upper = new String(s.signatureHeader(), StandardCharsets.US_ASCII).toUpperCase().getBytes(StandardCharsets.US_ASCII);
        byte[] truncated = Arrays.copyOf(s.signatureHeader(), 63);

        assertThat(rule(verifier.verify(key, value, s.keyIdHeader(), new byte[0]))).isEqualTo(Rule.BAD_SIGNATURE);
        assertThat(rule(verifier.verify(key, value, s.keyIdHeader(), truncated))).isEqualTo(Rule.BAD_SIGNATURE);
        assertThat(rule(verifier.verify(key, value, s.keyIdHeader(), upper))).isEqualTo(Rule.BAD_SIGNATURE);
    }

    @Test
    void refusesAGoodSignatureForANodeOutsideTheKeysGlob() {
        HeartbeatKeys keys = HeartbeatKeys.parse("gpus " + SECRET_A + " gpu-*\nrack1 " + SECRET_B + " rack1-*-a\nsolo "
                + SECRET_C + " gpu-a");
        HeartbeatVerifier v = new HeartbeatVerifier(keys);
        HeartbeatSigner gpus = new HeartbeatSigner(keys);
        HeartbeatSigner rack1 = new HeartbeatSigner(HeartbeatKeys.parse("rack1 " + SECRET_B));
        HeartbeatSigner solo = new HeartbeatSigner(HeartbeatKeys.parse("solo " + SECRET_C));

        assertThat(signedBy(v, gpus, "gpu-7").isVerified()).isTrue();
        assertThat(rule(signedBy(v, gpus, "cpu-7"))).isEqualTo(Rule.KEY_NOT_ALLOWED);
        assertThat(signedBy(v, rack1, "rack1-u12-a").isVerified()).isTrue();
        assertThat(rule(signedBy(v, rack1, "rack1-u12-b"))).isEqualTo(Rule.KEY_NOT_ALLOWED);
        assertThat(signedBy(v, solo, "gpu-a").isVerified()).isTrue();
        assertThat(rule(signedBy(v, solo, "gpu-ab"))).isEqualTo(Rule.KEY_NOT_ALLOWED);
        assertThat(((Verification.Refused) signedBy(v, solo, "gpu-b")).rejection().detail())
                .isEqualTo("key solo may only sign for node ids matching gpu-a");
    }

    @Test
    void checksTheSignatureBeforeTheGlob() {
        HeartbeatKeys keys = HeartbeatKeys.parse("gpus " + SECRET_A + " gpu-*");
        Signature forged = new HeartbeatSigner(HeartbeatKeys.parse("gpus " + SECRET_C)).sign(bytes("cpu-1"), value);

        assertThat(rule(new HeartbeatVerifier(keys).verify(bytes("cpu-1"), value, forged.keyIdHeader(),
                forged.signatureHeader()))).isEqualTo(Rule.BAD_SIGNATURE);
    }

    @Test
    void acceptsTheOldAndTheNewKeyDuringARotation() {
        Signature byNew = new HeartbeatSigner(AGENT).sign(key, value);
        Signature byOld = new HeartbeatSigner(OLD_AGENT).sign(key, value);

        assertThat(verify(key, value, byNew)).isEqualTo(new Verification.Verified("new"));
        assertThat(verify(key, value, byOld)).isEqualTo(new Verification.Verified("old"));
        // After the rotation the scheduler drops the old key.
        HeartbeatVerifier after = new HeartbeatVerifier(AGENT);
        assertThat(rule(after.verify(key, value, byOld.keyIdHeader(), byOld.signatureHeader()))).isEqualTo(Rule.UNKNOWN_KEY);
    }

    @Test
    void agreesAcrossThreads() throws Exception {
        HeartbeatSigner signer = new HeartbeatSigner(AGENT);
        Signature expected = signer.sign(key, value);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Callable<Boolean>> tasks = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                tasks.add(() -> {
                    for (int i = 0; i < 500; i++) {
                        Signature s = signer.sign(key, value);
                        if (!Arrays.equals(s.signatureHeader(), expected.signatureHeader())
                                || !verify(key, value, s).isVerified()) {
                            return false;
                        }
                    }
                    return true;
                });
            }
            for (Future<Boolean> f : pool.invokeAll(tasks)) {
                assertThat(f.get()).isTrue();
            }
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void matchesAnHmacComputedByHandOverTheDocumentedLayout() throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(SECRET_A.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        ByteBuffer input = ByteBuffer.allocate(1 + 4 + 3 + 4 + 5 + 4)
                .put((byte) 1).putInt(3).put(bytes("new")).putInt(5).put(key).putInt(-1);
        String hex = HexFormat.of().formatHex(mac.doFinal(input.array()));

        assertThat(new HeartbeatSigner(AGENT).sign(key, null).toString()).isEqualTo("new:" + hex);
    }

    private Verification verify(byte[] recordKey, byte[] recordValue, Signature s) {
        return verifier.verify(recordKey, recordValue, s.keyIdHeader(), s.signatureHeader());
    }

    private Verification signedBy(HeartbeatVerifier v, HeartbeatSigner signer, String nodeId) {
        Signature s = signer.sign(bytes(nodeId), value);
        return v.verify(bytes(nodeId), value, s.keyIdHeader(), s.signatureHeader());
    }

    private static Rule rule(Verification v) {
        assertThat(v).isInstanceOf(Verification.Refused.class);
        return ((Verification.Refused) v).rule();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}

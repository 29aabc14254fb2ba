package io.heartgate.scheduler.trust;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.InvalidSettingException;
import org.junit.jupiter.api.Test;

class ApiKeysTest {

    private static final String KEY = "hg-team-a-secret";

    @Test
    void theHashIsSha256OfTheUtf8BytesInLowerCaseHex() {
        // printf %s abc | sha256sum
        assertThat(ApiKeys.hash("abc")).isEqualTo("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    @Test
    void findsAKeyByWhatTheCallerSendsAndNothingElse() {
        ApiKeys keys = ApiKeys.parse("""
                # team keys
                team-a %s   # the first team
                team-b %s models=llama3,mistral:7b

                """.formatted(ApiKeys.hash(KEY), ApiKeys.hash("other")));
        assertThat(keys.size()).isEqualTo(2);
        assertThat(keys.find(KEY).name()).isEqualTo("team-a");
        assertThat(keys.find(KEY).models()).isEmpty();
        assertThat(keys.find("other").models()).containsExactlyInAnyOrder("llama3:latest", "mistral:7b");
        assertThat(keys.find(KEY + "x")).isNull();
        assertThat(keys.find("")).isNull();
        assertThat(keys.find(ApiKeys.hash(KEY))).as("the hash itself is no key").isNull();
        assertThat(keys.toString()).doesNotContain(ApiKeys.hash(KEY));
    }

    @Test
    void aKeyLimitedToModelsAllowsListingsButNotABodyWithoutAModel() {
        ApiKeys.Key key = ApiKeys.parse("k " + ApiKeys.hash(KEY) + " models=llama3:8b").find(KEY);
        assertThat(key.allows("llama3:8b", "POST")).isTrue();
        assertThat(key.allows("mistral:7b", "POST")).isFalse();
        assertThat(key.allows(null, "GET")).isTrue();
        assertThat(key.allows(null, "POST")).isFalse();
        ApiKeys.Key any = ApiKeys.parse("k " + ApiKeys.hash(KEY)).find(KEY);
        assertThat(any.allows(null, "POST")).isTrue();
        assertThat(any.allows("anything:1b", "POST")).isTrue();
    }

    @Test
    void priorityAndLimitsAreReadFromTheKeysLine() {
        ApiKeys.Key key = ApiKeys.parse("batch " + ApiKeys.hash(KEY) + " priority=-2 rpm=60 tpm=100000 models=llama3\n")
                .find(KEY);
        assertThat(key.priority()).isEqualTo(-2);
        assertThat(key.rpm()).isEqualTo(60);
        assertThat(key.tpm()).isEqualTo(100_000);
        assertThat(key.limited()).isTrue();
        ApiKeys.Key plain = ApiKeys.parse("k " + ApiKeys.hash(KEY)).find(KEY);
        assertThat(plain.priority()).isZero();
        assertThat(plain.limited()).isFalse();
    }

    @Test
    void everyFaultNamesItsLine() {
        String h = ApiKeys.hash(KEY);
        assertFault("a\n", "line 1: expected NAME SHA256_HEX");
        assertFault("# c\nteam a\n", "line 2: key 'team': the hash must be 64 lower-case hex digits");
        assertFault("team " + h.toUpperCase() + "\n", "line 1: key 'team': the hash must be 64 lower-case hex");
        assertFault("te am" + h + "\n", "line 1:");
        assertFault("t/m " + h + "\n", "line 1: key name 't/m' must be 1 to 64 of A-Za-z0-9._-");
        assertFault("team " + h + " burst=10\n", "line 1: key 'team': unknown attribute 'burst=10' (known: models=..., "
                + "priority=..., rpm=..., tpm=...)");
        assertFault("team " + h + " rpm=0\n", "line 1: key 'team': rpm= must be a whole number from 1 to 1000000000, "
                + "was '0'");
        assertFault("team " + h + " tpm=1k\n", "line 1: key 'team': tpm= must be a whole number from 1");
        assertFault("team " + h + " priority=1001\n", "line 1: key 'team': priority= must be a whole number from -1000 "
                + "to 1000");
        assertFault("team " + h + " rpm=5 rpm=6\n", "line 1: key 'team': rpm is given twice");
        assertFault("team " + h + " models\n", "line 1: key 'team': unknown attribute 'models'");
        assertFault("team " + h + " models=a models=b\n", "line 1: key 'team': models is given twice");
        assertFault("team " + h + " models=a,,b\n", "line 1: key 'team': models= has an empty entry");
        assertFault("team " + h + "\nteam " + ApiKeys.hash("x") + "\n", "line 2: key name 'team' is used twice");
        assertFault("a " + h + "\nb " + h + "\n", "line 2: the same key hash is listed twice (key 'b')");
    }

    @Test
    void anEmptyFileAllowsNobody() {
        ApiKeys none = ApiKeys.parse("# every key revoked\n");
        assertThat(none.size()).isZero();
        assertThat(none.find(KEY)).isNull();
    }

    private static void assertFault(String text, String message) {
        assertThatThrownBy(() -> ApiKeys.parse(text))
                .isInstanceOf(InvalidSettingException.class)
                .satisfies(e -> assertThat(((InvalidSettingException) e).setting()).isEqualTo("apiKeys"))
                .hasMessageContaining(message);
    }
}

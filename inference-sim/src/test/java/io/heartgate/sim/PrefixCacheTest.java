package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PrefixCacheTest {

    private static final String SYSTEM = "You are a careful assistant. ".repeat(8); // 232 chars

    @Test
    void aRepeatedPromptIsCachedInWholeBlocksAndCountedInTokens() {
        PrefixCache cache = new PrefixCache(100, 16);
        assertThat(cache.lookup(SYSTEM)).isZero();
        assertThat(cache.lookup(SYSTEM)).isEqualTo(224); // 14 whole blocks of 16; the last 8 chars are no block
        assertThat(cache.queriedTokens()).isEqualTo(2 * 58); // 232 chars = 58 tokens, twice
        assertThat(cache.hitTokens()).isEqualTo(56);
        assertThat(cache.blocks()).isEqualTo(14);
    }

    @Test
    void aBlockMatchesOnlyWhenEverythingBeforeItDoes() {
        PrefixCache cache = new PrefixCache(100, 4);
        cache.lookup("aaaabbbbcccc");
        assertThat(cache.lookup("aaaabbbbdddd")).as("first two blocks shared").isEqualTo(8);
        assertThat(cache.lookup("xxxxbbbbcccc")).as("same later blocks after another first one").isZero();
        assertThat(cache.lookup("aaaabbbbcccceeee")).as("a conversation growing by a turn").isEqualTo(12);
    }

    @Test
    void theLeastRecentlyUsedBlocksAreEvicted() {
        PrefixCache cache = new PrefixCache(4, 4);
        cache.lookup("aaaabbbb"); // 2 blocks
        cache.lookup("ccccdddd"); // 4 blocks: full
        cache.lookup("aaaabbbb"); // touches a's two
        cache.lookup("eeee"); // evicts c's first block, the least recently used
        assertThat(cache.lookup("aaaabbbb")).isEqualTo(8);
        assertThat(cache.lookup("ccccdddd")).as("its first block is gone, so nothing after it counts").isZero();
    }

    @Test
    void withoutBlocksNothingIsEverCached() {
        PrefixCache cache = new PrefixCache(0, 4);
        cache.lookup("aaaabbbb");
        assertThat(cache.lookup("aaaabbbb")).isZero();
        assertThat(cache.hitTokens()).isZero();
        assertThat(cache.queriedTokens()).isEqualTo(4);
    }
}

package io.heartgate.sim;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class TextSourceTest {

    private final TextSource gpuA = new TextSource("gpu-a");

    @Test
    void countsTheTokensOfAnyNodesAnswerFromItsBeginning() {
        assertThat(TextSource.continuedFrom("[gpu-a]")).isEqualTo(1);
        assertThat(TextSource.continuedFrom("[gpu-a] the GPU streams tokens")).isEqualTo(5);
        assertThat(TextSource.continuedFrom(new TextSource("node 7").text(9))).isEqualTo(9);
        for (int k = 1; k <= 40; k++) {
            assertThat(TextSource.continuedFrom(gpuA.text(k))).as("k = %d", k).isEqualTo(k);
        }
    }

    @Test
    void readsPastTheEndOfTheWordsAsTheyRepeat() {
        String twoRounds = gpuA.text(1 + 2 * 16 + 3); // marker, the 16 words twice, then " the GPU streams"

        assertThat(twoRounds).endsWith(". the GPU streams");
        assertThat(TextSource.continuedFrom(twoRounds)).isEqualTo(36);
    }

    @Test
    void ignoresTrailingWhitespaceSoACutAfterTheWordOrItsSpaceCountsTheSame() {
        assertThat(TextSource.continuedFrom("[gpu-a] the ")).isEqualTo(2);
        assertThat(TextSource.continuedFrom("[gpu-a] the")).isEqualTo(2);
        assertThat(TextSource.continuedFrom("[gpu-a] the GPU\n\t ")).isEqualTo(3);
        assertThat(TextSource.continuedFrom("[gpu-a] ")).isEqualTo(1);
    }

    @Test
    void saysMinusOneForTextThatIsNotSimOutput() {
        assertThat(TextSource.continuedFrom("The sky is blue because")).isEqualTo(-1);
        assertThat(TextSource.continuedFrom("")).isEqualTo(-1);
        assertThat(TextSource.continuedFrom(null)).isEqualTo(-1);
        assertThat(TextSource.continuedFrom("[] the")).as("no name").isEqualTo(-1);
        assertThat(TextSource.continuedFrom(" [gpu-a] the")).as("leading space").isEqualTo(-1);
        assertThat(TextSource.continuedFrom("[gpu-a] the GP")).as("cut inside a word").isEqualTo(-1);
        assertThat(TextSource.continuedFrom("[gpu-a] GPU the")).as("words out of order").isEqualTo(-1);
        assertThat(TextSource.continuedFrom("[gpu-a]  the")).as("two spaces").isEqualTo(-1);
        assertThat(TextSource.continuedFrom("[gpu-a] the GPU [gpu-b]")).as("a second marker").isEqualTo(-1);
    }

    @Test
    void givesTheTextOfTokensFromAnyIndex() {
        assertThat(gpuA.text(2, 3)).isEqualTo(" GPU streams tokens");
        assertThat(gpuA.text(0, 2)).isEqualTo(gpuA.text(2));
        assertThat(gpuA.text(5, 0)).isEmpty();
    }
}

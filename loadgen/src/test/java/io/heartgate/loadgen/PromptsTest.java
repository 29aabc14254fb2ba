package io.heartgate.loadgen;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class PromptsTest {

    @ParameterizedTest(name = "{0} characters")
    @ValueSource(ints = {1, 2, 7, 64, 1600, 16_000})
    void aMessageOfALengthHasExactlyThatManyCharactersAndEndsAsAQuestion(int chars) {
        String m = Prompts.ofLength(11, 3, 1, chars);

        assertThat(m).hasSize(chars).endsWith("?");
        assertThat(Prompts.ofLength(11, 3, 1, chars)).as("repeatable").isEqualTo(m);
    }

    @ParameterizedTest(name = "{0} characters")
    @ValueSource(ints = {0, -5})
    void aLengthBelowOneGivesOneCharacter(int chars) {
        assertThat(Prompts.ofLength(11, 3, 1, chars)).isEqualTo("?");
    }

    @ParameterizedTest(name = "{0} characters")
    @ValueSource(ints = {40, 400})
    void aMessageOfALengthDrawsTheWordsOfTheSameMessageByWords(int chars) {
        String byWords = Prompts.user(11, 3, 1, 200);
        String byLength = Prompts.ofLength(11, 3, 1, chars);

        assertThat(byWords).startsWith(byLength.substring(0, chars - 1));
        assertThat(Prompts.ofLength(11, 4, 1, chars)).as("another conversation").isNotEqualTo(byLength);
        assertThat(Prompts.ofLength(11, 3, 2, chars)).as("another turn").isNotEqualTo(byLength);
    }
}

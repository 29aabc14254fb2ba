package io.heartgate.scheduler.request;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RequestFactsTest {

    @Test
    void theDisplayedModelLosesTheTagNormalisingAdded() {
        assertThat(RequestFacts.ofModel("llama3:latest").displayModel()).isEqualTo("llama3");
        assertThat(RequestFacts.ofModel("llama3:8b").displayModel()).isEqualTo("llama3:8b");
        assertThat(RequestFacts.NONE.displayModel()).isEmpty();
    }

    @Test
    void stagesAddWhatTheyLearnToACopy() {
        RequestFacts f = new RequestFacts("m:latest", true, 7L, null);

        assertThat(f.withCaller("team-a")).isEqualTo(new RequestFacts("m:latest", true, 7L, "team-a"));
        assertThat(f.withAffinity(9L)).isEqualTo(new RequestFacts("m:latest", true, 9L, null));
        assertThat(f.caller()).isNull();
    }
}

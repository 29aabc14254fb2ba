package io.heartgate.scheduler.proxy.stage;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** How a Responses API request names the response it continues or reads. */
class ResponseFollowUpTest {

    private static String previous(String body) {
        return ResponseFollowUp.previousId(body.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void theTopLevelPreviousResponseIdIsRead() {
        assertThat(previous("{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"previous_response_id\":\"resp_nested\"}],"
                + "\"previous_response_id\":\"resp_1\"}")).isEqualTo("resp_1");
        assertThat(previous("{\"previous_response_id\":\"resp_1\",\"previous_response_id\":\"resp_2\"}"))
                .as("the last, as the servers' parsers keep it").isEqualTo("resp_2");
        assertThat(previous("{\"previous_response_id\":null}")).isNull();
        assertThat(previous("{\"input\":\"hi\"}")).isNull();
        assertThat(previous("[1]")).isNull();
        assertThat(previous("{\"previous_response_id\":\"resp_1\",\"input\":")).as("broken after it").isEqualTo("resp_1");
    }

    @Test
    void theIdOfAStoredResponseIsReadFromThePath() {
        assertThat(ResponseFollowUp.pathId("/v1/responses/resp_1")).isEqualTo("resp_1");
        assertThat(ResponseFollowUp.pathId("/v1/responses/resp_1/cancel")).isEqualTo("resp_1");
        assertThat(ResponseFollowUp.pathId("/v1/responses/resp_1?stream=true")).isEqualTo("resp_1");
        assertThat(ResponseFollowUp.pathId("/v1/responses//cancel")).isNull();
        assertThat(ResponseFollowUp.pathId("/v1/responses/%zz")).as("a broken escape").isNull();
    }
}

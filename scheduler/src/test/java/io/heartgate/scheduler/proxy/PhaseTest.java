package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class PhaseTest {

    @Test
    void theRelaysPathsAreAllowed() {
        assertThat(Phase.ROUTING.to(Phase.SENT).to(Phase.RELAYING).to(Phase.DONE)).isEqualTo(Phase.DONE);
        assertThat(Phase.ROUTING.to(Phase.SENT).to(Phase.ROUTING).to(Phase.SENT).to(Phase.DONE))
                .as("a retry, then an answer of the proxy's own").isEqualTo(Phase.DONE);
        assertThat(Phase.ROUTING.to(Phase.DONE)).as("refused, or the client left while queued").isEqualTo(Phase.DONE);
        assertThat(Phase.ROUTING.to(Phase.SENT).to(Phase.RELAYING).to(Phase.ROUTING).to(Phase.SENT).to(Phase.RELAYING))
                .as("a stream whose node failed mid-answer moves to another node").isEqualTo(Phase.RELAYING);
    }

    @Test
    void illegalTransitionsAreRejected() {
        assertThatThrownBy(() -> Phase.RELAYING.to(Phase.SENT)).isInstanceOf(IllegalStateException.class)
                .hasMessage("exchange cannot go from RELAYING to SENT");
        assertThatThrownBy(() -> Phase.DONE.to(Phase.DONE)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> Phase.ROUTING.to(Phase.RELAYING)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> Phase.SENT.to(Phase.SENT)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> Phase.RELAYING.to(Phase.SENT)).isInstanceOf(IllegalStateException.class);
    }
}

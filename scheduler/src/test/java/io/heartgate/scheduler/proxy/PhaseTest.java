package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class PhaseTest {

    @Test
    void theRelaysPathsAreAllowed() {
        assertThat(Phase.ROUTING.to(Phase.CONNECTING).to(Phase.AWAITING_HEAD).to(Phase.RELAYING).to(Phase.DONE))
                .isEqualTo(Phase.DONE);
        assertThat(Phase.ROUTING.to(Phase.AWAITING_HEAD).to(Phase.DISCARDING).to(Phase.ROUTING).to(Phase.DONE))
                .isEqualTo(Phase.DONE);
        assertThat(Phase.AWAITING_HEAD.to(Phase.CONNECTING)).as("a stale pooled connection: sent again")
                .isEqualTo(Phase.CONNECTING);
    }

    @Test
    void illegalTransitionsAreRejected() {
        assertThatThrownBy(() -> Phase.RELAYING.to(Phase.ROUTING)).isInstanceOf(IllegalStateException.class)
                .hasMessage("exchange cannot go from RELAYING to ROUTING");
        assertThatThrownBy(() -> Phase.DONE.to(Phase.DONE)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> Phase.ROUTING.to(Phase.RELAYING)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> Phase.DISCARDING.to(Phase.RELAYING)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> Phase.CONNECTING.to(Phase.RELAYING)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void theHeadIsAwaitedOnlyOnceSent() {
        for (Phase p : Phase.values()) {
            assertThat(p.beforeHead()).as(p.name()).isEqualTo(p == Phase.AWAITING_HEAD);
        }
    }
}

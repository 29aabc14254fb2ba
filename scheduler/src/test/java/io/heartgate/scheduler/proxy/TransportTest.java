package io.heartgate.scheduler.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.heartgate.protocol.InvalidSettingException;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.uring.IoUring;
import org.junit.jupiter.api.Test;

class TransportTest {

    @Test
    void parsesEveryFlagSpellingAndRejectsOthersNamingTheSetting() {
        assertThat(Transport.parse("auto")).isEqualTo(Transport.AUTO);
        assertThat(Transport.parse("io_uring")).isEqualTo(Transport.IO_URING);
        assertThat(Transport.parse(" EPOLL ")).isEqualTo(Transport.EPOLL);
        assertThat(Transport.parse("nio")).isEqualTo(Transport.NIO);
        assertThatThrownBy(() -> Transport.parse("kqueue"))
                .isInstanceOfSatisfying(InvalidSettingException.class, e -> {
                    assertThat(e.setting()).isEqualTo("transport");
                    assertThat(e.problem()).isEqualTo("must be one of auto, io_uring, epoll, nio, was 'kqueue'");
                });
        assertThatThrownBy(() -> Transport.parse(null)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void autoTakesTheBestTransportThisHostOffers() {
        Transport expected = IoUring.isAvailable() ? Transport.IO_URING : Epoll.isAvailable() ? Transport.EPOLL
                : Transport.NIO;

        assertThat(Transport.AUTO.resolve()).isEqualTo(expected);
        assertThat(Transport.NIO.resolve()).isEqualTo(Transport.NIO);
    }

    @Test
    void anExplicitTransportTheHostLacksIsAFlagError() {
        for (Transport t : new Transport[] {Transport.IO_URING, Transport.EPOLL}) {
            boolean available = t == Transport.IO_URING ? IoUring.isAvailable() : Epoll.isAvailable();
            if (available) {
                assertThat(t.resolve()).isEqualTo(t);
            } else {
                assertThatThrownBy(t::resolve)
                        .isInstanceOf(InvalidSettingException.class)
                        .hasMessageStartingWith("transport " + t.flagValue() + " is not available on this host (")
                        .hasMessageEndingWith("); use auto, epoll or nio");
            }
        }
    }

    @Test
    void theUnresolvedChoiceHasNoChannelTypes() {
        assertThatThrownBy(Transport.AUTO::socketChannel).isInstanceOf(IllegalStateException.class);
        assertThat(Transport.NIO.socketChannel().getSimpleName()).isEqualTo("NioSocketChannel");
    }
}

package io.heartgate.scheduler.proxy;

import io.heartgate.protocol.InvalidSettingException;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDatagramChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.DatagramChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.uring.IoUring;
import io.netty.channel.uring.IoUringDatagramChannel;
import io.netty.channel.uring.IoUringIoHandler;
import io.netty.channel.uring.IoUringServerSocketChannel;
import io.netty.channel.uring.IoUringSocketChannel;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The I/O transport of the proxy's event loops ({@code --transport}): io_uring, native epoll or
 * Java NIO, with {@link #AUTO} taking the best the host offers (NIO on hosts that are not Linux,
 * epoll in a container whose seccomp profile refuses io_uring). io_uring is preferred because it
 * costs the relay the least CPU per request.
 */
public enum Transport {
    /** The default: io_uring, else epoll, else NIO. */
    AUTO,
    /** Linux io_uring, where Netty's probe at start finds it (recent kernel, not disabled). */
    IO_URING,
    /** Linux native epoll. */
    EPOLL,
    /** Java NIO, available everywhere. */
    NIO;

    /** Returns the flag's spelling: {@code auto}, {@code io_uring}, {@code epoll}, {@code nio}. */
    public String flagValue() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * Parses a transport's name ({@link #flagValue()}).
     *
     * @throws InvalidSettingException for {@code transport}, listing the accepted values
     */
    public static Transport parse(String value) {
        for (Transport t : values()) {
            if (t.flagValue().equals(value == null ? "" : value.trim().toLowerCase(Locale.ROOT))) {
                return t;
            }
        }
        throw new InvalidSettingException("transport", "must be one of "
                + Arrays.stream(values()).map(Transport::flagValue).collect(Collectors.joining(", ")) + ", was '" + value + "'");
    }

    /**
     * Returns the concrete transport to use here: the best available for {@link #AUTO}, else this one.
     *
     * @throws InvalidSettingException for {@code transport}, when this one was asked for and the host lacks it
     */
    public Transport resolve() {
        switch (this) {
            case AUTO:
                return IoUring.isAvailable() ? IO_URING : Epoll.isAvailable() ? EPOLL : NIO;
            case IO_URING:
                requireAvailable(IoUring.isAvailable(), IoUring.unavailabilityCause());
                return this;
            case EPOLL:
                requireAvailable(Epoll.isAvailable(), Epoll.unavailabilityCause());
                return this;
            default:
                return this;
        }
    }

    /** Returns why {@link #AUTO} did not take io_uring (nor epoll), for the start-up log; empty when it did. */
    String whyNotFaster() {
        if (this == IO_URING) {
            return "";
        }
        String uring = "io_uring: " + cause(IoUring.unavailabilityCause());
        return this == EPOLL ? uring : uring + "; epoll: " + cause(Epoll.unavailabilityCause());
    }

    private void requireAvailable(boolean available, Throwable cause) {
        if (!available) {
            throw new InvalidSettingException("transport", flagValue() + " is not available on this host ("
                    + cause(cause) + "); use auto, epoll or nio");
        }
    }

    private static String cause(Throwable t) {
        if (t == null) {
            return "not Linux";
        }
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root.getMessage() == null ? root.getClass().getSimpleName() : root.getMessage();
    }

    IoHandlerFactory ioHandlerFactory() {
        return switch (concrete()) {
            case IO_URING -> IoUringIoHandler.newFactory();
            case EPOLL -> EpollIoHandler.newFactory();
            default -> NioIoHandler.newFactory();
        };
    }

    Class<? extends ServerChannel> serverChannel() {
        return switch (concrete()) {
            case IO_URING -> IoUringServerSocketChannel.class;
            case EPOLL -> EpollServerSocketChannel.class;
            default -> NioServerSocketChannel.class;
        };
    }

    Class<? extends SocketChannel> socketChannel() {
        return switch (concrete()) {
            case IO_URING -> IoUringSocketChannel.class;
            case EPOLL -> EpollSocketChannel.class;
            default -> NioSocketChannel.class;
        };
    }

    Class<? extends DatagramChannel> datagramChannel() {
        return switch (concrete()) {
            case IO_URING -> IoUringDatagramChannel.class;
            case EPOLL -> EpollDatagramChannel.class;
            default -> NioDatagramChannel.class;
        };
    }

    private Transport concrete() {
        if (this == AUTO) {
            throw new IllegalStateException("resolve() the transport first");
        }
        return this;
    }
}

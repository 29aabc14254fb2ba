package io.heartgate.scheduler.proxy;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;

/**
 * A separate process holding many idle client connections to the proxy (each side of a connection
 * is a file descriptor, so ten thousand of them on both sides would not fit one process's limit):
 * {@code IdleClients PORT COUNT} connects COUNT times, sends nothing, prints {@code opened N failed F in T ms}, and
 * exits when its standard input closes.
 */
public final class IdleClients {

    private IdleClients() {
    }

    public static void main(String[] args) throws IOException {
        int port = Integer.parseInt(args[0]);
        int count = Integer.parseInt(args[1]);
        List<SocketChannel> open = new ArrayList<>(count);
        int failed = 0;
        long start = System.nanoTime();
        for (int i = 0; i < count; i++) {
            try {
                open.add(SocketChannel.open(new InetSocketAddress("127.0.0.1", port)));
            } catch (IOException e) {
                failed++;
            }
        }
        System.out.println("opened " + open.size() + " failed " + failed + " in "
                + (System.nanoTime() - start) / 1_000_000 + " ms");
        System.out.flush();
        while (System.in.read() != -1) {
            // wait for the test to close our stdin
        }
        for (SocketChannel c : open) {
            c.close();
        }
    }
}

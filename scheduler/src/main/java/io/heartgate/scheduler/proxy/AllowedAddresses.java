package io.heartgate.scheduler.proxy;

import io.heartgate.scheduler.trust.UpstreamAllowList;
import io.netty.resolver.AbstractAddressResolver;
import io.netty.resolver.AddressResolver;
import io.netty.resolver.AddressResolverGroup;
import io.netty.util.concurrent.EventExecutor;
import io.netty.util.concurrent.Future;
import io.netty.util.concurrent.Promise;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;

/**
 * Resolves node addresses with the proxy's resolver, then lets through only those the upstream
 * allow-list allows, before every connect: a host name whose heartbeat was accepted cannot be
 * re-pointed at a forbidden address (DNS rebinding to a metadata service or to loopback). A refused
 * address fails the connect, as a refused connection would. Thread-safe.
 */
final class AllowedAddresses extends AddressResolverGroup<InetSocketAddress> {

    private final AddressResolverGroup<InetSocketAddress> resolvers;
    private final UpstreamAllowList allow;

    AllowedAddresses(AddressResolverGroup<InetSocketAddress> resolvers, UpstreamAllowList allow) {
        this.resolvers = resolvers;
        this.allow = allow;
    }

    @Override
    protected AddressResolver<InetSocketAddress> newResolver(EventExecutor executor) {
        AddressResolver<InetSocketAddress> inner = resolvers.getResolver(executor);
        return new AbstractAddressResolver<InetSocketAddress>(executor, InetSocketAddress.class) {
            @Override
            protected boolean doIsResolved(InetSocketAddress address) {
                return false; // every address, literal or looked up, goes through the check
            }

            @Override
            protected void doResolve(InetSocketAddress unresolved, Promise<InetSocketAddress> promise) {
                inner.resolve(unresolved).addListener((Future<InetSocketAddress> f) -> {
                    if (!f.isSuccess()) {
                        promise.tryFailure(f.cause());
                    } else if (allow.allowsResolved(f.getNow().getAddress())) {
                        promise.trySuccess(f.getNow());
                    } else {
                        promise.tryFailure(refused(unresolved, f.getNow()));
                    }
                });
            }

            @Override
            protected void doResolveAll(InetSocketAddress unresolved, Promise<List<InetSocketAddress>> promise) {
                inner.resolveAll(unresolved).addListener((Future<List<InetSocketAddress>> f) -> {
                    if (!f.isSuccess()) {
                        promise.tryFailure(f.cause());
                        return;
                    }
                    List<InetSocketAddress> allowed = new ArrayList<>();
                    for (InetSocketAddress a : f.getNow()) {
                        if (allow.allowsResolved(a.getAddress())) {
                            allowed.add(a);
                        }
                    }
                    if (allowed.isEmpty()) {
                        promise.tryFailure(refused(unresolved, f.getNow().isEmpty() ? unresolved : f.getNow().get(0)));
                    } else {
                        promise.trySuccess(allowed);
                    }
                });
            }
        };
    }

    private ConnectException refused(InetSocketAddress asked, InetSocketAddress resolved) {
        String name = asked.getHostString();
        String address = resolved.getAddress() == null ? resolved.getHostString() : resolved.getAddress().getHostAddress();
        return new ConnectException(name + " resolves to " + address + ", outside --allow-upstream " + allow);
    }
}

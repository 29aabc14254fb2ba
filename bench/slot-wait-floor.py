#!/usr/bin/env python3
"""The least time to first token any queue order can give a request on a fleet whose slots all generate.

usage: slot-wait-floor.py [--slots 12] [--first-token-ms 100] [--token-ms 25]
                          [--min-tokens 8] [--tokens 72] [--quantile 0.99] [--idle-ms P]

bench/overload.sh part 1 keeps every slot busy (the goodput goal asks for that: HAProxy's and
nginx's slots are 97 to 99.7% busy), so a request that arrives, even one served ahead of everyone
else, starts only when some slot's answer ends. Each slot, refilled at once from the backlog, is a
renewal process of answers of n tokens, n drawn evenly from MIN_TOKENS..TOKENS, as the sim runs
them: the first token FIRST_TOKEN after the start, the n - 1 others a token delay apart, the slot
free at the last. A Poisson arrival sees each slot's stationary residual time,
P(R > w) = E[max(0, S - w)] / E[S], and the slots are independent, so no slot frees within w with
probability P(R > w) ** slots. Its quantile is the floor of the wait at that quantile under every
order of service that leaves no slot idle; the first token comes on top. Exact for the benchmark's
discrete answer lengths, with no simulation. With --idle-ms (a light caller's idle-fleet p99), it
says whether "within 2x of idle" can hold at all with every slot busy.
"""
import argparse
import sys


def residual_survival(services, w):
    """P(R > w) for a stationary renewal process whose renewal times are the equally likely services."""
    mean = sum(services) / len(services)
    return sum(max(0.0, s - w) for s in services) / len(services) / mean


def wait_quantile(services, slots, quantile):
    """The w at which P(no slot frees within w) falls to 1 - quantile, by bisection."""
    low, high = 0.0, max(services)
    for _ in range(100):
        mid = (low + high) / 2
        if residual_survival(services, mid) ** slots > 1 - quantile:
            low = mid
        else:
            high = mid
    return high


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=12)
    parser.add_argument("--first-token-ms", type=float, default=100.0)
    parser.add_argument("--token-ms", type=float, default=25.0)
    parser.add_argument("--min-tokens", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=72)
    parser.add_argument("--quantile", type=float, default=0.99)
    parser.add_argument("--idle-ms", type=float, help="the light caller's idle-fleet p99, to compare")
    args = parser.parse_args(argv)
    if args.slots < 1 or not 0 < args.quantile < 1 or not 1 <= args.min_tokens <= args.tokens:
        parser.error("need --slots >= 1, 0 < --quantile < 1 and 1 <= --min-tokens <= --tokens")
    if args.first_token_ms < 0 or args.token_ms <= 0:
        parser.error("need --first-token-ms >= 0 and --token-ms > 0")
    services = [args.first_token_ms + (n - 1) * args.token_ms for n in range(args.min_tokens, args.tokens + 1)]
    wait = wait_quantile(services, args.slots, args.quantile)
    mean = sum(services) / len(services)
    ttft = args.first_token_ms + wait
    q = f"p{args.quantile * 100:g}"
    print(f"answers: {mean:.0f} ms on average; {args.slots} slots free one every {mean / args.slots:.0f} ms")
    print(f"{q} wait for the next freed slot, any order of service: at least {wait:.0f} ms")
    print(f"{q} time to first token: at least {ttft:.0f} ms")
    if args.idle_ms is not None:
        verdict = "can hold" if ttft <= 2 * args.idle_ms else "cannot hold with every slot busy"
        print(f"against 2 x the idle {q} of {args.idle_ms:g} ms = {2 * args.idle_ms:g} ms: {verdict} "
              f"({ttft / args.idle_ms:.2f}x at best)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

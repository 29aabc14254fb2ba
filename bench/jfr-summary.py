#!/usr/bin/env python3
"""Summarises a JFR recording of the scheduler: the hottest methods (self and inclusive) and
allocation by origin, on the proxy's event-loop threads and on all threads.

  bench/jfr-summary.py RECORDING.jfr [TOP] [THREAD_PREFIX]

THREAD_PREFIX: the threads looked at (heartgate-proxy, the event loops, by default; main for the
in-memory path of RequestPathBenchmark or InMemoryProxy).

Origin of an allocation: the first frame, from the allocating one down, outside the JDK (java.,
jdk., sun., com.sun.): a HashMap grown by Heartgate's code is Heartgate's; a buffer Netty's
codec takes is Netty's."""
import collections, json, subprocess, sys

JDK = ("java.", "jdk.", "sun.", "com.sun.")


def events(path, kind):
    out = subprocess.run(["jfr", "print", "--json", "--stack-depth", "96", "--events", kind, path],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["recording"]["events"]


def frames(ev):
    st = ev["values"].get("stackTrace") or {}
    for f in st.get("frames") or []:
        m = f["method"]
        yield m["type"]["name"].replace("/", ".") + "." + m["name"]


def thread(ev):
    t = ev["values"].get("sampledThread") or ev["values"].get("eventThread") or {}
    return (t.get("javaName") or t.get("osName") or "?")


def origin(stack):
    for f in stack:
        if not f.startswith(JDK):
            if f.startswith("io.heartgate."):
                return "heartgate"
            if f.startswith("io.netty."):
                return "netty"
            return f.split(".")[1] if f.count(".") > 1 else f
    return "jdk"


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    prefix = sys.argv[3] if len(sys.argv) > 3 else "heartgate-proxy"
    samples = events(path, "jdk.ExecutionSample")
    proxy = [e for e in samples if thread(e).startswith(prefix)]
    selfc, incl, own = collections.Counter(), collections.Counter(), collections.Counter()
    for e in proxy:
        stack = list(frames(e))
        if not stack:
            continue
        selfc[stack[0]] += 1
        for f in set(stack):
            incl[f] += 1
        for f in stack:  # the innermost Heartgate frame: where Heartgate's own code spends (itself or below)
            if f.startswith("io.heartgate."):
                own[f] += 1
                break
    n = max(1, len(proxy))
    print(f"CPU samples: {len(samples)} in all, {len(proxy)} on threads {prefix}*.")
    print()
    for title, c in ((f"Self (top frame), threads {prefix}*", selfc),
                     (f"Innermost Heartgate frame, threads {prefix}*", own),
                     (f"Inclusive, Heartgate methods, threads {prefix}*",
                      collections.Counter({k: v for k, v in incl.items() if k.startswith("io.heartgate.")}))):
        print(f"### {title}")
        print()
        print("| method | share |")
        print("| --- | ---: |")
        for k, v in c.most_common(top):
            print(f"| `{k}` | {100.0 * v / n:.1f}% |")
        print()
    allocs = events(path, "jdk.ObjectAllocationSample")
    by_origin, by_site = collections.Counter(), collections.Counter()
    total = 0
    for e in allocs:
        if not thread(e).startswith(prefix):
            continue
        w = e["values"].get("weight") or 0
        stack = list(frames(e))
        o = origin(stack)
        by_origin[o] += w
        total += w
        site = next((f for f in stack if not f.startswith(JDK)), stack[0] if stack else "?")
        cls = (e["values"].get("objectClass") or {}).get("name", "?")
        by_site[(o, site, cls)] += w
    print(f"### Allocation on threads {prefix}*, by origin (sampled, weighted by bytes)")
    print()
    print("| origin | share |")
    print("| --- | ---: |")
    for k, v in by_origin.most_common():
        print(f"| {k} | {100.0 * v / max(1, total):.1f}% |")
    print()
    print("| origin | site | class | share |")
    print("| --- | --- | --- | ---: |")
    for (o, site, cls), v in by_site.most_common(top):
        print(f"| {o} | `{site}` | `{cls}` | {100.0 * v / max(1, total):.1f}% |")


if __name__ == "__main__":
    main()

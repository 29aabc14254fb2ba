#!/usr/bin/env python3
"""Summarises bench/proxy.sh's rows against the request path's goals (issue 37), run by run.

usage: summary.py ROWS.tsv
Each wrk run measures direct, nginx and the scheduler back to back, and each streaming burst holds
the three at once (a row each), so ratios and "added over direct" are taken within one run (the
machine's speed drifts between runs) and then the median over runs is reported with the range.
"""
import statistics
import sys

NGINX, SCHEDULER = "nginx (3 sims)", "scheduler (3 sims)"
KEYED = "scheduler, API keys (3 sims)"  # API_KEYS=1: a second scheduler with --api-keys
DIRECT = "direct"  # "direct (one sim)" for requests, "direct (3 sims)" for streams


def ms(value):
    """wrk prints latencies as 812.00us, 1.20ms or 1.05s."""
    for unit, factor in (("us", 0.001), ("ms", 1.0), ("s", 1000.0)):
        if value.endswith(unit):
            return float(value[: -len(unit)]) * factor
    raise ValueError(value)


def runs(rows):
    """Groups rows into runs of {target: row}, a run starting with the direct row."""
    run = {}
    for row in rows:
        target = DIRECT if row[1].startswith(DIRECT) else row[1]
        if target == DIRECT and run:
            if DIRECT in run and NGINX in run and SCHEDULER in run:
                yield run
            run = {}
        run[target] = row
    if DIRECT in run and NGINX in run and SCHEDULER in run:
        yield run


def span(values, fmt):
    values = list(values)
    return f"{fmt(statistics.median(values))} (runs: {fmt(min(values))} to {fmt(max(values))})"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: summary.py ROWS.tsv (written by bench/proxy.sh)")
    with open(sys.argv[1]) as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    print("| measure | scheduler | nginx | goal | met? |")
    print("| --- | --- | --- | --- | --- |")
    for conns in sorted({int(r[2]) for r in rows if r[0] == "wrk"}):
        wrk = [r for r in rows if r[0] == "wrk" and int(r[2]) == conns]
        rs = list(runs(wrk))
        ratio = [float(r[SCHEDULER][3]) / float(r[NGINX][3]) for r in rs]
        print(f"| throughput, {conns} connections (x nginx) | {span(ratio, lambda v: f'{v:.2f}x')} | 1.00x "
              f"| >= 1.20x | {'yes' if statistics.median(ratio) >= 1.2 else 'no'} |")
        added = [ms(r[SCHEDULER][4]) - ms(r[DIRECT][4]) for r in rs]
        nginx_added = [ms(r[NGINX][4]) - ms(r[DIRECT][4]) for r in rs]
        print(f"| p99 added over direct, {conns} connections | {span(added, lambda v: f'{v:+.2f} ms')} "
              f"| {span(nginx_added, lambda v: f'{v:+.2f} ms')} | (none) | - |")
        with_tail = [r for r in rs if len(r[SCHEDULER]) > 7 and len(r[NGINX]) > 7]
        if with_tail:
            # Each wrk run opens its connections anew, so the tail includes a burst of new connections.
            tail = [ms(r[SCHEDULER][7]) / ms(r[NGINX][7]) for r in with_tail]
            goal, met = ("<= 2.00x", "yes" if statistics.median(tail) <= 2 else "no") if conns == 256 else ("(none)", "-")
            print(f"| p99.9, {conns} new connections (x nginx, same run) | {span(tail, lambda v: f'{v:.2f}x')} "
                  f"| 1.00x | {goal} | {met} |")
        cpu = [float(r[SCHEDULER][5]) / float(r[NGINX][5]) for r in rs]
        goal, met = ("<= 0.90x", "yes" if statistics.median(cpu) <= 0.9 else "no") if conns == 32 else ("(none)", "-")
        print(f"| proxy CPU per request, {conns} connections (x nginx, same run) | {span(cpu, lambda v: f'{v:.2f}x')} "
              f"| 1.00x | {goal} | {met} |")
        errors = [int(r[SCHEDULER][6]) for r in rs]
        print(f"| socket errors and non-2xx, {conns} connections | {sum(errors)} | {sum(int(r[NGINX][6]) for r in rs)} "
              f"| 0 | {'yes' if sum(errors) == 0 else 'no'} |")
        keyed = [r for r in rs if KEYED in r]
        if keyed:
            with_keys = [float(r[KEYED][5]) / float(r[SCHEDULER][5]) for r in keyed]
            # Issue 15's goal: with API keys on, CPU per request within 3% of without.
            print(f"| proxy CPU per request with API keys, {conns} connections (x without, same run) "
                  f"| {span(with_keys, lambda v: f'{v:.3f}x')} | - | <= 1.03x "
                  f"| {'yes' if statistics.median(with_keys) <= 1.03 else 'no'} |")
    early = [r for r in rows if r[0] == "early"]
    if early and early[0][1]:
        later = [float(r[SCHEDULER][3]) for r in runs([r for r in rows if r[0] == "wrk" and int(r[2]) == 32])]
        if later:
            share = float(early[0][1]) / statistics.median(later)
            print(f"| requests/s {early[0][3]} s after start, 32 connections (x after the warm-up) | {share:.2f}x "
                  f"({float(early[0][1]):,.0f} against {statistics.median(later):,.0f}) | - | >= 0.85x "
                  f"| {'yes' if share >= 0.85 else 'no'} |")
    for kind, label in (("streams", "SSE"), ("ndjson", "NDJSON")):
        streams = list(runs([r for r in rows if r[0] == kind]))
        if not streams:
            continue
        ttft = [float(r[SCHEDULER][2]) - float(r[DIRECT][2]) for r in streams]
        nginx_ttft = [float(r[NGINX][2]) - float(r[DIRECT][2]) for r in streams]
        print(f"| {label} TTFT p50 added over direct | {span(ttft, lambda v: f'{v:+.2f} ms')} "
              f"| {span(nginx_ttft, lambda v: f'{v:+.2f} ms')} | (none) | - |")
        # A burst holds the three at once, so the scheduler's delay less nginx's is one difference per
        # burst, (S - D) - (N - D) = S - N: the goal read burst by burst, the machine's moment cancelled.
        paired = [float(r[SCHEDULER][2]) - float(r[NGINX][2]) for r in streams]
        ahead = sum(1 for v in paired if v <= 0)
        print(f"| {label} TTFT p50 added, scheduler less nginx, same burst | "
              f"{span(paired, lambda v: f'{v:+.2f} ms')}, at most nginx's in {ahead} of {len(paired)} | - "
              f"| <= 0 | {'yes' if statistics.median(paired) <= 0 else 'no'} |")
        gap = [float(r[SCHEDULER][3]) - float(r[DIRECT][3]) for r in streams]
        nginx_gap = [float(r[NGINX][3]) - float(r[DIRECT][3]) for r in streams]
        print(f"| {label} inter-token p50 added over direct | {span(gap, lambda v: f'{v:+.2f} ms')} "
              f"| {span(nginx_gap, lambda v: f'{v:+.2f} ms')} | (none) | - |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Compares the routable sets of scheduler replicas once a second (bench/replicas-agree.sh): each
replica's /admin/nodes?routable=true, paged, read one after the other. A node one replica routes to
and another does not is explained when the fleet's events file (`epochMs join|die nodeId`) shows
it joined or died within one expiry and one second of the comparison (a new node heard by one
replica first, a dead one expired by one first) or when it flapped (flaps are not in the file:
those are counted apart, as differences that lasted one comparison only). Prints one Markdown row.

    bench/replicas-agree.py EVENTS EXPIRY_MS SECONDS ADMIN_URL...
"""
import sys
import time

from adminnodes import node_ids

events_file, expiry, seconds, admins = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]


def routable(admin):
    return node_ids(admin, "routable=true&")


rounds = []  # (ms, [sets])
for _ in range(seconds):
    began = time.time()
    at = int(began * 1000)
    rounds.append((at, [routable(a) for a in admins]))
    time.sleep(max(0.0, 1.0 - (time.time() - began)))
time.sleep(6)  # the fleet writes its events every few seconds
changes = {}
for line in open(events_file):
    ms, what, node = line.split()
    changes.setdefault(node, []).append(int(ms))

differing, unexplained, lasting = 0, 0, 0
previous = set()
for at, sets in rounds:
    union = set().union(*sets)
    diff = {n for n in union if any(n not in s for s in sets)}
    differing = max(differing, len(diff))
    for n in diff:
        recent = any(abs(at - t) <= expiry + 1000 for t in changes.get(n, []))
        if not recent:
            if n in previous:
                lasting += 1
            unexplained += 1
    previous = diff
sizes = [len(s) for s in rounds[-1][1]]
print(f"| {len(admins)} | {len(rounds)} | {' / '.join(f'{x:,}' for x in sizes)} | {differing} | {unexplained} | {lasting} |")

#!/usr/bin/env python3
"""Compares the routable sets of scheduler replicas once a second (bench/replicas-agree.sh): each
replica's /admin/nodes?routable=true, paged, read one after the other. A node one replica routes to
and another does not is explained when the fleet's events file (`epochMs join|die|flap nodeId`)
shows a change of it young enough: a join or a death within one expiry and one second of the
comparison (a new node heard by one replica first, a dead one expired by one first), or a flap
(a DOWN beat at its time, an UP beat one interval later) within two intervals and one second after
it. Prints one Markdown row.

    bench/replicas-agree.py EVENTS EXPIRY_MS INTERVAL_MS SECONDS ADMIN_URL...
"""
import sys
import time

from adminnodes import node_ids

events_file, expiry, interval, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
admins = sys.argv[5:]


def routable(admin):
    return node_ids(admin, "routable=true&")


rounds = []  # (ms, [sets])
for _ in range(seconds):
    began = time.time()
    at = int(began * 1000)
    rounds.append((at, [routable(a) for a in admins]))
    time.sleep(max(0.0, 1.0 - (time.time() - began)))
time.sleep(6)  # the fleet writes its events every few seconds
changes = {}  # node id -> [(ms, what)]
for line in open(events_file):
    ms, what, node = line.split()
    changes.setdefault(node, []).append((int(ms), what))


def young(at, t, what):
    if what == "flap":
        return -1000 <= at - t <= 2 * interval + 1000
    return abs(at - t) <= expiry + 1000


differing, unexplained, lasting = 0, 0, 0
previous = set()
for at, sets in rounds:
    union = set().union(*sets)
    diff = {n for n in union if any(n not in s for s in sets)}
    differing = max(differing, len(diff))
    for n in diff:
        recent = any(young(at, t, what) for t, what in changes.get(n, []))
        if not recent:
            if n in previous:
                lasting += 1
            unexplained += 1
    previous = diff
sizes = [len(s) for s in rounds[-1][1]]
print(f"| {len(admins)} | {len(rounds)} | {' / '.join(f'{x:,}' for x in sizes)} | {differing} | {unexplained} | {lasting} |")

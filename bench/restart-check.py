#!/usr/bin/env python3
"""Checks the table of a scheduler just restarted among a synthetic fleet against the fleet's events
file (`epochMs join|die|flap nodeId`, bench/heartbeats.sh; flaps ignored): lists every node through /admin/nodes pages
and prints `missing revived`: live nodes (joined by READY_MS less one interval and one second, not
died by the time the listing is done) it does not list, and nodes it lists that died before READY_MS less the
expiry, one interval and one second, and did not come back before the listing was done. A node
that died within that may still be listed, and one that joined within the last interval may not
be yet, neither count holds them: at ready the table holds the topic read to where the last round
of the catch-up began, under an interval ago, and expiry waits until the topic is known read past
a node's expiry (up to a second in steady state). Waits for the fleet to write the
events of the listing's seconds (it flushes every few seconds) before reading them.

    bench/restart-check.py EVENTS ADMIN_URL READY_MS EXPIRY_MS INTERVAL_MS"""
import sys
import time

from adminnodes import node_ids

events_file, admin, ready, expiry, interval = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
listed = node_ids(admin)
listed_by = int(time.time() * 1000)
time.sleep(6)
last = {}  # node id -> (ms, join|die): its last event before the listing was done
for line in open(events_file):
    at, what, node = line.split()
    if what in ("join", "die") and int(at) <= listed_by:
        last[node] = (int(at), what)
missing = [node for node, (at, what) in last.items()
           if what == "join" and at <= ready - interval - 1000 and node not in listed]
revived = [node for node in listed
           if node in last and last[node][1] == "die" and last[node][0] < ready - expiry - interval - 1000]
for name, nodes in (("missing", missing), ("revived", revived)):
    if nodes:
        print(f"restart-check: {name}: " + ", ".join(f"{n} ({last[n][1]} {ready - last[n][0]} ms before ready)"
                                                      for n in sorted(nodes)[:10]), file=sys.stderr)
print(len(missing), len(revived))

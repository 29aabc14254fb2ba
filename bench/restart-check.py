#!/usr/bin/env python3
"""Checks the table of a scheduler just restarted among a synthetic fleet against the fleet's events
file (`epochMs join|die nodeId`, bench/heartbeats.sh): lists every node through /admin/nodes pages
and prints `missing revived`: live nodes (joined, not died since, as of READY_MS less one second)
it does not list, and nodes it lists that died before READY_MS less the expiry and one second and
did not come back. A node that died within its expiry may still be listed: neither count holds it.

    bench/restart-check.py EVENTS ADMIN_URL READY_MS EXPIRY_MS"""
import json
import sys
import urllib.parse
import urllib.request

events_file, admin, ready, expiry = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
last = {}  # node id -> (ms, join|die): its last event before the ready moment
for line in open(events_file):
    at, what, node = line.split()
    if int(at) <= ready:
        last[node] = (int(at), what)
listed, cursor = set(), None
while True:
    url = admin + "/admin/nodes?limit=10000" + ("&cursor=" + urllib.parse.quote(cursor) if cursor else "")
    page = json.load(urllib.request.urlopen(url, timeout=60))
    listed.update(n["nodeId"] for n in page["nodes"])
    cursor = page.get("cursor")
    if not cursor:
        break
missing = sum(1 for node, (at, what) in last.items()
              if what == "join" and at <= ready - 1000 and node not in listed)
revived = sum(1 for node in listed
              if node in last and last[node][1] == "die" and last[node][0] < ready - expiry - 1000)
print(missing, revived)

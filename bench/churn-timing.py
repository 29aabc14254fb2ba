#!/usr/bin/env python3
"""Join-to-listed and last-beat-to-expiry times of a synthetic fleet's churn, read from the fleet's
events file (`epochMs join|die|flap nodeId`, flaps ignored) and the scheduler's log (`HH:mm:ss.SSS ... Node ID joined`,
`restarted`, `expired`), for the events between two epoch-ms bounds. Prints the two Markdown cells
`p99 ms (n)` of bench/heartbeats.sh's table. Both files are of one machine's clock, one UTC day: the
script starts the scheduler with -Duser.timezone=UTC, so its log's times are UTC too."""
import datetime
import re
import sys

events_file, log_file, start, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
midnight = int(datetime.datetime.now(datetime.timezone.utc).replace(hour=0, minute=0, second=0,
                                                                     microsecond=0).timestamp() * 1000)
seen = {}  # node id -> list of (ms, what) from the scheduler's log
line_re = re.compile(r'^(\d\d):(\d\d):(\d\d)\.(\d\d\d) .*Node (\S+) (joined|restarted|expired)')
for line in open(log_file, errors='replace'):
    m = line_re.match(line)
    if m:
        h, mi, s, ms, node, what = m.groups()
        at = midnight + ((int(h) * 60 + int(mi)) * 60 + int(s)) * 1000 + int(ms)
        seen.setdefault(node, []).append((at, 'expired' if what == 'expired' else 'listed'))
joins, expiries = [], []
for line in open(events_file):
    at, what, node = line.split()
    at = int(at)
    if what not in ('join', 'die') or not start <= at <= end:
        continue
    want = 'listed' if what == 'join' else 'expired'
    after = [t for t, w in seen.get(node, []) if w == want and t >= at]
    (joins if what == 'join' else expiries).append(after[0] - at if after else None)


def cell(values):
    found = sorted(v for v in values if v is not None)
    if not found:
        return f"- (0 of {len(values)})"
    p99 = found[min(len(found) - 1, int(len(found) * 0.99))]
    missing = len(values) - len(found)
    return f"{p99:,} ({len(found)}{f', {missing} never' if missing else ''})"


print(f"{cell(joins)} | {cell(expiries)}")

#!/usr/bin/env python3
"""Offers one API key's requests at a steady rate and counts what the gateway grants.

    bench/rate-client.py URL KEY RATE SECONDS [THREADS]

Sends small chat completions to URL (a scheduler or a load balancer in front of several) with
Authorization: Bearer KEY, RATE requests a second in all, for SECONDS, over THREADS keep-alive
connections, each paced on its own schedule. Prints one line a second ("second granted refused
other") and, last, a JSON line of the totals. Used by bench/replicas.sh.
"""
import http.client
import json
import sys
import threading
import time
from urllib.parse import urlparse

BODY = json.dumps({"model": "bench-fast", "messages": [{"role": "user", "content": "hi"}]}).encode()


def main():
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    url, key, rate, seconds = urlparse(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    threads = int(sys.argv[5]) if len(sys.argv) > 5 else 4
    start = time.monotonic()
    counts = [[0, 0, 0] for _ in range(seconds + 1)]
    lock = threading.Lock()

    def run(index):
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        gap = threads / rate
        due = start + index * (1 / rate)
        while True:
            now = time.monotonic()
            if now - start >= seconds:
                return
            if due > now:
                time.sleep(due - now)
            due += gap
            try:
                conn.request("POST", "/v1/chat/completions", BODY,
                             {"Content-Type": "application/json", "Authorization": "Bearer " + key})
                resp = conn.getresponse()
                resp.read()
                status = resp.status
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
                status = 0
            slot = min(seconds, int(time.monotonic() - start))
            with lock:
                counts[slot][0 if status == 200 else 1 if status == 429 else 2] += 1

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for second, (ok, refused, other) in enumerate(counts[:seconds]):
        print(second, ok, refused, other)
    print(json.dumps({"granted": sum(c[0] for c in counts), "refused": sum(c[1] for c in counts),
                      "other": sum(c[2] for c in counts), "seconds": seconds, "rate": rate}))


if __name__ == "__main__":
    main()

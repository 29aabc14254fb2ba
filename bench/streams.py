#!/usr/bin/env python3
"""Opens N concurrent streaming chat completions and reports time to first token and inter-token gaps.

usage: streams.py HOST PORT[,PORT...] MODEL STREAMS [sse|ndjson]
       streams.py HOST NAME=PORT[,PORT...][/NAME=PORT[,PORT...]...] MODEL STREAMS [sse|ndjson]
sse (the default): OpenAI's /v1/chat/completions, an SSE stream ending in [DONE]; ndjson: Ollama's
/api/chat, one JSON object per line ending in "done":true.
With several ports, stream i goes to port i mod n (the direct baseline spread over the nodes).
Prints one JSON object: ttft_ms_p50/p99, gap_ms_p50/p99, streams, tokens, errors.

With named targets, STREAMS streams go to each target in one burst, interleaved (stream i to
target i mod the number of targets), and one such object is printed per target, keyed by its
name: every target then meets the same moment of the machine (its load, the client's own delays),
so their difference is what each path adds, not how busy the machine was when each was measured.

Standard library only. Each connection is an asyncio protocol: the event loop hands it every read
directly (no coroutine per line), and a token's time is taken when the read that completes its line
arrives. A client that spends long on each token stamps the streams it reaches last in a loop
iteration late, and with hundreds of streams that delay, not the proxies', would be measured.
"""
import asyncio
import json
import sys
import time


class Stream(asyncio.Protocol):
    """One streamed answer: decodes the head, chunked framing and lines as bytes arrive.

    A proxy may re-frame chunks (HTTP gives chunk boundaries no meaning), so a line can span two
    chunks or two reads: lines are cut from the decoded body, never from the raw socket.
    """

    def __init__(self, request, ndjson, done):
        self.request, self.ndjson, self.done = request, ndjson, done
        self.raw = b""        # undecoded bytes: the head, then chunk framing
        self.head = True
        self.chunked = False
        self.left = 0          # bytes of the current chunk's data still to come
        self.crlf = 0          # bytes of the CRLF after a chunk's data still to come
        self.pending = b""     # decoded body bytes not yet ending in a newline
        self.stamps = []
        self.start = 0.0
        self.ended = False

    def connection_made(self, transport):
        self.transport = transport
        self.start = time.perf_counter()
        transport.write(self.request)

    def data_received(self, data):
        now = time.perf_counter()
        self.raw += data
        if self.head:
            end = self.raw.find(b"\r\n\r\n")
            if end < 0:
                return
            self.chunked = b"transfer-encoding: chunked" in self.raw[:end].lower()
            self.raw = self.raw[end + 4:]
            self.head = False
        if self.chunked:
            body = self.dechunk()
        else:
            body, self.raw = self.raw, b""
        if body:
            self.lines(body, now)

    def dechunk(self):
        out = []
        while self.raw:
            if self.left > 0:  # inside a chunk's data
                take = self.raw[:self.left]
                self.raw = self.raw[len(take):]
                self.left -= len(take)
                out.append(take)
                if self.left == 0:
                    self.crlf = 2
            elif self.crlf > 0:  # the CRLF after a chunk's data
                skip = min(self.crlf, len(self.raw))
                self.raw = self.raw[skip:]
                self.crlf -= skip
            else:  # a size line
                nl = self.raw.find(b"\r\n")
                if nl < 0:
                    break
                size = int(self.raw[:nl].split(b";")[0].strip() or b"0", 16)
                self.raw = self.raw[nl + 2:]
                if size == 0:
                    self.finish()
                    break
                self.left = size
        return b"".join(out)

    def lines(self, body, now):
        self.pending += body
        *lines, self.pending = self.pending.split(b"\n")
        for line in lines:
            if is_token(line, self.ndjson):
                self.stamps.append(now)
            if is_end(line, self.ndjson):
                self.finish()
                return

    def finish(self):
        if not self.ended:
            self.ended = True
            self.transport.close()

    def connection_lost(self, exc):
        if not self.done.done():
            self.done.set_result(None)


def is_token(line, ndjson):
    if ndjson:
        return line.startswith(b"{") and b'"content":"' in line and b'"content":""' not in line
    return line.startswith(b"data: {") and b'"content":"' in line and b'"content":""' not in line


def is_end(line, ndjson):
    return b'"done":true' in line if ndjson else line.startswith(b"data: [DONE]")


async def one(host, port, model, results, ndjson):
    body = json.dumps({"model": model, "stream": True,
                       "messages": [{"role": "user", "content": "Say hello"}]}).encode()
    path = "/api/chat" if ndjson else "/v1/chat/completions"
    req = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    try:
        _, stream = await loop.create_connection(lambda: Stream(req, ndjson, done), host, port)
        await done
    except (OSError, ValueError):
        results["errors"] += 1
        return
    stamps = stream.stamps
    if not stamps or not stream.ended:
        results["errors"] += 1
        return
    results["ttft"].append((stamps[0] - stream.start) * 1000)
    results["gaps"].extend((b - a) * 1000 for a, b in zip(stamps, stamps[1:]))
    results["tokens"] += len(stamps)


def pct(values, p):
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(p / 100 * len(values)))], 3)


def summary(results, n):
    return {"streams": n, "tokens": results["tokens"], "errors": results["errors"],
            "ttft_ms_p50": pct(results["ttft"], 50), "ttft_ms_p99": pct(results["ttft"], 99),
            "gap_ms_p50": pct(results["gaps"], 50), "gap_ms_p99": pct(results["gaps"], 99)}


def targets(spec):
    """"a=1,2/b=3" -> [("a", [1, 2]), ("b", [3])]; a bare "1,2" is one unnamed target."""
    if "=" not in spec:
        return [(None, [int(p) for p in spec.split(",")])]
    named = []
    for part in spec.split("/"):
        name, ports = part.split("=", 1)
        if not name:
            raise ValueError(part)
        named.append((name, [int(p) for p in ports.split(",")]))
    return named


async def main():
    try:
        host, model, n = sys.argv[1], sys.argv[3], int(sys.argv[4])
        groups = targets(sys.argv[2])
        mode = sys.argv[5] if len(sys.argv) > 5 else "sse"
        if mode not in ("sse", "ndjson"):
            raise ValueError(mode)
    except (IndexError, ValueError):
        sys.exit("usage: streams.py HOST PORT[,PORT...]|NAME=PORT[,PORT...][/NAME=...] MODEL STREAMS [sse|ndjson]")
    results = [{"ttft": [], "gaps": [], "tokens": 0, "errors": 0} for _ in groups]
    calls = []
    for i in range(n * len(groups)):
        g, k = i % len(groups), i // len(groups)
        ports = groups[g][1]
        calls.append(one(host, ports[k % len(ports)], model, results[g], mode == "ndjson"))
    await asyncio.gather(*calls)
    if groups[0][0] is None:
        print(json.dumps(summary(results[0], n)))
    else:
        print(json.dumps({name: summary(r, n) for (name, _), r in zip(groups, results)}))


asyncio.run(main())

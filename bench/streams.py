#!/usr/bin/env python3
"""Opens N concurrent streaming chat completions and reports time to first token and inter-token gaps.

usage: streams.py HOST PORT[,PORT...] MODEL STREAMS [sse|ndjson]
sse (the default): OpenAI's /v1/chat/completions, an SSE stream ending in [DONE]; ndjson: Ollama's
/api/chat, one JSON object per line ending in "done":true.
With several ports, stream i goes to port i mod n (the direct baseline spread over the nodes).
Prints one JSON object: ttft_ms_p50/p99, gap_ms_p50/p99, streams, tokens, errors.
Standard library only (asyncio, raw HTTP/1.1), so the client adds as little as possible.
"""
import asyncio
import json
import sys
import time


async def sse_lines(reader):
    """Yields the body's lines as each one completes, decoding chunked transfer encoding.

    A proxy may re-frame chunks (HTTP gives chunk boundaries no meaning), so a line can span two
    chunks: reading the raw socket line by line would miss a token split that way and count the
    next one as first. A line's timestamp is when its last byte arrived.
    """
    head = await reader.readuntil(b"\r\n\r\n")
    chunked = b"transfer-encoding: chunked" in head.lower()
    pending = b""
    while True:
        if chunked:
            size_line = await reader.readline()
            if not size_line:
                return
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                return
            data = await reader.readexactly(size)
            await reader.readexactly(2)  # the chunk's CRLF
        else:
            data = await reader.read(65536)
            if not data:
                return
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line


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
    try:
        reader, writer = await asyncio.open_connection(host, port)
        start = time.perf_counter()
        writer.write(req)
        await writer.drain()
        stamps = []
        async for line in sse_lines(reader):
            if is_token(line, ndjson):
                stamps.append(time.perf_counter())
            if is_end(line, ndjson):
                break
        writer.close()
        if not stamps:
            results["errors"] += 1
            return
        results["ttft"].append((stamps[0] - start) * 1000)
        results["gaps"].extend((b - a) * 1000 for a, b in zip(stamps, stamps[1:]))
        results["tokens"] += len(stamps)
    except (OSError, EOFError, ValueError, asyncio.LimitOverrunError):
        results["errors"] += 1


def pct(values, p):
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(p / 100 * len(values)))], 3)


async def main():
    try:
        host, model, n = sys.argv[1], sys.argv[3], int(sys.argv[4])
        ports = [int(p) for p in sys.argv[2].split(",")]
        mode = sys.argv[5] if len(sys.argv) > 5 else "sse"
        if mode not in ("sse", "ndjson"):
            raise ValueError(mode)
    except (IndexError, ValueError):
        sys.exit("usage: streams.py HOST PORT[,PORT...] MODEL STREAMS [sse|ndjson]")
    results = {"ttft": [], "gaps": [], "tokens": 0, "errors": 0}
    await asyncio.gather(*(one(host, ports[i % len(ports)], model, results, mode == "ndjson") for i in range(n)))
    print(json.dumps({"streams": n, "tokens": results["tokens"], "errors": results["errors"],
                      "ttft_ms_p50": pct(results["ttft"], 50), "ttft_ms_p99": pct(results["ttft"], 99),
                      "gap_ms_p50": pct(results["gaps"], 50), "gap_ms_p99": pct(results["gaps"], 99)}))


asyncio.run(main())

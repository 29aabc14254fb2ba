#!/usr/bin/env bash
# System calls per request, one command: what the scheduler and nginx each ask of the kernel for one
# small chat completion at steady state (three fast sims behind each, wrk at 32 connections, strace
# counting on every thread of the proxy). A count, not a time: the machine's load does not move it
# much, and on loopback each write also pays the peer's receive in the kernel, so fewer calls per
# request is less CPU per request.
#
#   bench/syscalls.sh [JAR]          # JAR: scheduler/target/scheduler.jar by default
#
# Needs: java, wrk, nginx, strace, python3, curl.
set -euo pipefail
cd "$(dirname "$0")/.."
JAR=${1:-scheduler/target/scheduler.jar}
WARMUP=${WARMUP:-30}
NAME=bench/syscalls.sh
# shellcheck source=bench/lib.sh
. bench/lib.sh
command -v strace >/dev/null || { echo "$NAME: strace is not installed" >&2; exit 2; }

start_fast_stack "$JAR"
start_nginx
MODEL=bench-fast wrk -t2 -c32 -d"${WARMUP}s" -s bench/chat-completion.lua http://127.0.0.1:19080 > /dev/null
MODEL=bench-fast wrk -t2 -c32 -d10s -s bench/chat-completion.lua http://127.0.0.1:19090 > /dev/null

count() { # count NAME PORT PIDS...: a table row of system calls per request
  local name=$1 port=$2; shift 2
  local args=() p
  for p in "$@"; do args+=(-p "$p"); done
  strace -f -c -o "$WORK/strace.txt" "${args[@]}" 2>/dev/null &
  local tracer=$!
  sleep 2
  local out
  out=$(MODEL=bench-fast wrk -t2 -c32 -d10s -s bench/chat-completion.lua "http://127.0.0.1:$port")
  kill -INT "$tracer"; wait "$tracer" 2>/dev/null || true
  local reqs
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  python3 - "$WORK/strace.txt" "$reqs" "$name" <<'PY'
import sys
path, reqs, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
calls = {}
for line in open(path):
    f = line.split()
    if len(f) >= 5 and f[-1] not in ("syscall", "total") and f[3].isdigit():
        calls[f[-1]] = int(f[3])
top = sorted(calls.items(), key=lambda kv: -kv[1])
total = sum(calls.values())
print(f"| {name} | {reqs} | {total / reqs:.2f} | " + ", ".join(f"{k} {v / reqs:.2f}" for k, v in top[:8]) + " |")
PY
}
split() { # split NAME PORT PIDS...: a table row of user and system CPU per request, untraced
  local name=$1 port=$2; shift 2
  local u0=0 s0=0 u1=0 s1=0 p f out reqs
  for p in "$@"; do read -r -a f < <(sed 's/^.*) //' "/proc/$p/stat"); u0=$((u0 + f[11])); s0=$((s0 + f[12])); done
  out=$(MODEL=bench-fast wrk -t2 -c32 -d10s -s bench/chat-completion.lua "http://127.0.0.1:$port")
  for p in "$@"; do read -r -a f < <(sed 's/^.*) //' "/proc/$p/stat"); u1=$((u1 + f[11])); s1=$((s1 + f[12])); done
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  python3 -c "t=$(getconf CLK_TCK); r=$reqs; print(f'| $name | {r} | {($u1-$u0)/t/r*1e6:.1f} | {($s1-$s0)/t/r*1e6:.1f} |')"
}
echo "## CPU per request by mode, $(date -u +%Y-%m-%dT%H:%MZ), $JAR, 32 connections, 10 s untraced"
echo
echo "| proxy | requests | user us/request | system us/request |"
echo "| --- | ---: | ---: | ---: |"
split "scheduler" 19080 "$SCHED"
split "nginx" 19090 $(nginx_pids)
echo
echo "## System calls per request, $(date -u +%Y-%m-%dT%H:%MZ), $JAR"
echo
echo "| proxy | requests traced | calls/request | by call (per request) |"
echo "| --- | ---: | ---: | --- |"
count "scheduler" 19080 "$SCHED"
count "nginx" 19090 $(nginx_pids)

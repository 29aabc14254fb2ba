#!/usr/bin/env bash
# Where the scheduler's CPU goes at steady state, kernel included: three fast sims behind a
# scheduler jar under wrk (32 connections), perf sampling every thread of the scheduler for 15 s
# after a 40 s warm-up, the JIT's symbols from jcmd Compiler.perfmap. Complements bench/profile.sh
# (JFR: Java frames only, allocation too).
#
#   bench/perf-profile.sh [JAR] [OUT_PREFIX]    # JAR: scheduler/target/scheduler.jar; OUT_PREFIX: /tmp/perf-profile
#   CLOSE=1 CONNS=8 bench/perf-profile.sh       # a new client connection per request (Connection: close)
#
# Needs: java, jcmd, perf (Debian: linux-perf), wrk, python3, curl.
set -euo pipefail
cd "$(dirname "$0")/.."
JAR=${1:-scheduler/target/scheduler.jar}
OUTP=${2:-/tmp/perf-profile}
NAME=bench/perf-profile.sh
# shellcheck source=bench/lib.sh
. bench/lib.sh
command -v perf >/dev/null || { echo "$NAME: perf is not installed" >&2; exit 2; }
CONNS=${CONNS:-32}
CLOSE=${CLOSE:-0}
case $CONNS in ''|*[!0-9]*|0) echo "$NAME: CONNS must be a positive whole number, was '$CONNS'" >&2; exit 2 ;; esac
case $CLOSE in 0) HDR=() ;; 1) HDR=(-H 'Connection: close') ;; *) echo "$NAME: CLOSE must be 0 or 1, was '$CLOSE'" >&2; exit 2 ;; esac
start_fast_stack "$JAR" -XX:+PreserveFramePointer
MODEL=bench-fast wrk -t2 -c"$CONNS" -d40s "${HDR[@]}" -s bench/chat-completion.lua http://127.0.0.1:19080 > /dev/null
(MODEL=bench-fast wrk -t2 -c"$CONNS" -d20s "${HDR[@]}" -s bench/chat-completion.lua http://127.0.0.1:19080 > "$OUTP.wrk") &
LOAD=$!
sleep 2
perf record -e cpu-clock -F 999 -g -p "$SCHED" -o "$OUTP.data" -- sleep 15 > /dev/null 2>&1
jcmd "$SCHED" Compiler.perfmap > /dev/null
perf script -i "$OUTP.data" -F comm,tid,ip,sym,dso 2> /dev/null > "$OUTP.script"
wait "$LOAD"
echo "## perf profile of $JAR, $CONNS connections$([ "$CLOSE" = 1 ] && echo ", one per request"), $(date -u +%Y-%m-%dT%H:%MZ) ($(awk '/Requests\/sec/ {print $2}' "$OUTP.wrk") requests/s)"
echo
python3 bench/perf-summary.py "$OUTP.script"

#!/usr/bin/env bash
# CPU and allocation profile of the scheduler at steady state, one command: three fast sims behind
# a scheduler jar under wrk (small chat completions), JFR recording after a warm-up, then the
# hottest methods (self and inclusive, Heartgate's own) and the allocation by origin.
#
#   bench/profile.sh [JAR] [CONNECTIONS]        # JAR: scheduler/target/scheduler.jar by default
#   WARMUP=60 SECONDS=60 bench/profile.sh /tmp/old-scheduler.jar 32
#
# Prints a Markdown report; the recording stays in $OUT (default bench/results/profile-<date>.jfr)
# for `jfr print` or JDK Mission Control. Needs: java, jfr, wrk, python3, curl.
set -euo pipefail
cd "$(dirname "$0")/.."
JAR=${1:-scheduler/target/scheduler.jar}
CONNS=${2:-32}
WARMUP=${WARMUP:-60}
SECONDS_=${SECONDS:-60}
OUT=${OUT:-bench/results/profile-$(date -u +%Y%m%dT%H%M).jfr}
NAME=bench/profile.sh
# shellcheck source=bench/lib.sh
. bench/lib.sh
command -v jfr >/dev/null || { echo "$NAME: jfr is not installed (it comes with the JDK)" >&2; exit 2; }
[ -f "$JAR" ] || { echo "$NAME: $JAR missing" >&2; exit 2; }
mkdir -p "$(dirname "$OUT")"
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac

start_fast_stack "$JAR"
echo "Warming up for ${WARMUP}s..." >&2
MODEL=bench-fast wrk -t2 -c"$CONNS" -d"${WARMUP}s" -s bench/chat-completion.lua http://127.0.0.1:19080 > /dev/null
jcmd "$SCHED" JFR.start name=p settings=profile filename="$OUT" > /dev/null
wrk_measure 19080 "$CONNS" "$SECONDS_" "$SCHED"
jcmd "$SCHED" JFR.stop name=p > /dev/null
echo "## Profile of $JAR, $CONNS connections, ${SECONDS_}s after ${WARMUP}s warm-up, $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "requests/s $WRK_RPS, p99 $WRK_P99, proxy CPU $WRK_CPU us/request, errors $WRK_ERRORS"
echo
python3 bench/jfr-summary.py "$OUT"

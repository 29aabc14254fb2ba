#!/usr/bin/env bash
# A/B of scheduler JVM options and flags: three fast sims behind nginx and behind the scheduler, started once
# per variant; each round measures the scheduler, then nginx as the yardstick of the machine's speed
# at that moment. Prints one line per measurement: requests/s, p50, p99, proxy CPU us/request.
#
#   bench/variants.sh "default|" "parallel-gc|-XX:+UseParallelGC" "one-loop|-XX:ActiveProcessorCount=1"
#   bench/variants.sh "bare|bare:" "bare-vertx-meters|bare: -Dbare.vertxMeters=true"   # bench/BareProxy.java
#   bench/variants.sh "netty|netty:"                                                   # bench/BareNettyProxy.java
#   bench/variants.sh "epoll||--transport epoll" "io_uring||--transport io_uring"      # LABEL|JVM OPTIONS|FLAGS
#   bench/variants.sh "old|jar=/tmp/before.jar" "new|" "old|jar=/tmp/before.jar" "new|"  # A/B of two builds
#   ROUNDS=3 DURATION=10 WARMUP=40 CONNECTIONS=32 bench/variants.sh ...
#   WRK_CLOSE=1 CONNECTIONS=8 bench/variants.sh ...    # a new client connection per request
#
# Needs what bench/proxy.sh needs, after: mvn -B -DskipTests package.
set -uo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}; DURATION=${DURATION:-10}; WARMUP=${WARMUP:-40}; CONNECTIONS=${CONNECTIONS:-32}
NAME=bench/variants.sh
if [ $# -eq 0 ]; then
  echo "usage: bench/variants.sh \"LABEL|JVM OPTIONS[|SCHEDULER FLAGS]\"... (\"LABEL|bare: OPTIONS\" runs bench/BareProxy.java, \"LABEL|netty: OPTIONS\" bench/BareNettyProxy.java)" >&2
  exit 2
fi
for variant in "$@"; do
  case $variant in
    *"|"*) ;;
    *) echo "$NAME: '$variant' is not LABEL|JVM OPTIONS" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/lib.sh
. bench/lib.sh

measure() { # measure PORT PIDS...: one result line
  local port=$1; shift
  wrk_measure "$port" "$CONNECTIONS" "$DURATION" "$@"
  echo "rps=$WRK_RPS p50=$WRK_P50 p99=$WRK_P99 cpu_us=$WRK_CPU errors=$WRK_ERRORS"
}

start_fast_sims
start_nginx
MODEL=bench-fast wrk -t2 -c64 -d5s -s bench/chat-completion.lua http://127.0.0.1:19090 > /dev/null

for variant in "$@"; do
  label=${variant%%|*}; opts=${variant#*|}; flags=""
  if [[ $opts == *"|"* ]]; then flags=${opts#*|}; opts=${opts%%|*}; fi
  jar=scheduler/target/scheduler.jar
  if [[ $opts == jar=* ]]; then # another build of the scheduler: jar=PATH first among the JVM options
    first=${opts%% *}; jar=${first#jar=}
    if [[ $opts == *" "* ]]; then opts=${opts#* }; else opts=""; fi
    [ -f "$jar" ] || { echo "$NAME: $jar missing" >&2; exit 2; }
  fi
  if [[ $opts == bare:* || $opts == netty:* ]]; then
    # The yardsticks, on the same ports: the least a Vert.x proxy (bench/BareProxy.java) or a raw
    # Netty proxy (bench/BareNettyProxy.java) does.
    main=BareProxy; [[ $opts == netty:* ]] && main=BareNettyProxy
    if [ ! -f "$WORK/bare/$main.class" ]; then
      mkdir -p "$WORK/bare"
      javac -cp scheduler/target/scheduler.jar -d "$WORK/bare" "bench/$main.java"
    fi
    # shellcheck disable=SC2086 # options are words on purpose
    $OWN_SESSION java ${opts#*:} -cp "$WORK/bare:scheduler/target/scheduler.jar" "$main" > "$WORK/scheduler-$label.log" 2>&1 &
    sched=$!
    PIDS+=($sched)
    wait_for "$WORK/scheduler-$label.log" "proxy listening"
    agents=()
  else
    # shellcheck disable=SC2086 # options are words on purpose
    $OWN_SESSION java $opts -jar "$jar" --embedded-kafka-port 0 --bind 127.0.0.1 --port 19080 \
      --admin-port 19081 --strategy round-robin $flags > "$WORK/scheduler-$label.log" 2>&1 &
    sched=$!
    PIDS+=($sched)
    wait_for "$WORK/scheduler-$label.log" "proxy listening"
    kafka=$(grep -o 'kafka bootstrap [0-9.:]*' "$WORK/scheduler-$label.log" | awk '{print $3}')
    agents=()
    for i in 1 2 3; do
      java -Xmx96m -jar heartbeat-agent/target/heartbeat-agent.jar --kafka "$kafka" --node-id "fast-$i" \
        --url "http://127.0.0.1:1900$i" --backend ollama --interval 1s --nvidia-smi /nonexistent \
        > "$WORK/agent-$i.log" 2>&1 &
      agents+=($!); PIDS+=($!)
    done
    wait_routable 3
  fi
  MODEL=bench-fast wrk -t2 -c64 -d"${WARMUP}s" -s bench/chat-completion.lua http://127.0.0.1:19080 > /dev/null
  for _ in $(seq 1 "$ROUNDS"); do
    echo "[$label] scheduler $(measure 19080 "$sched")"
    echo "[$label] nginx     $(measure 19090 $(nginx_pids))"
  done
  kill "${agents[@]}" "$sched" 2>/dev/null
  wait "$sched" 2>/dev/null
  sleep 2
done

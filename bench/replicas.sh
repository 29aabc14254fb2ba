#!/usr/bin/env bash
# Limits across replicas, one command: three scheduler replicas behind nginx (round robin), one
# external broker, three fast sims with their agents, and one API key offered RATE requests/s
# against its rpm= LIMIT. Three rows, each with the replicas started afresh:
#   separate  - each replica on an events topic of its own: nothing shared, as before replicas
#               shared their usage (each grants the whole limit)
#   shared    - the three on one events topic (the default)
#   outage    - shared, with the broker stopped (SIGSTOP) for 10 s in the middle of the minute
# Each row offers the key's traffic for WARMUP seconds (the bucket's burst is spent there) and then
# counts what is granted over MEASURE seconds. Prints a Markdown report.
#
#   bench/replicas.sh                 # after: mvn -B -DskipTests package
#   LIMIT=600 RATE=120 WARMUP=20 MEASURE=60 bench/replicas.sh
#   RAW_DIR=/tmp/replicas bench/replicas.sh     # also keeps each row's per-second counts there
#
# Needs: java, nginx, python3, curl (Debian: apt-get install nginx-light python3 curl).
set -euo pipefail
cd "$(dirname "$0")/.."

LIMIT=${LIMIT:-600}
RATE=${RATE:-120}
WARMUP=${WARMUP:-20}
MEASURE=${MEASURE:-60}
for setting in LIMIT RATE WARMUP MEASURE; do
  case ${!setting} in ''|*[!0-9]*|0) echo "bench/replicas.sh: $setting must be a positive whole number, was '${!setting}'" >&2; exit 2 ;; esac
done
[ "$MEASURE" -ge 30 ] || { echo "bench/replicas.sh: MEASURE must be at least 30 (seconds), was $MEASURE" >&2; exit 2; }
NAME=bench/replicas.sh
# shellcheck source=bench/lib.sh
. bench/lib.sh

# A new key and the keys-file line that admits it, as an operator makes them.
mapfile -t NEW_KEY < <(java -jar scheduler/target/scheduler.jar keys add limited)
KEY=${NEW_KEY[0]}
echo "${NEW_KEY[1]} rpm=$LIMIT" > "$WORK/api-keys"

start_broker_host --events-topic broker-host-events # not one of the measured replicas
start_fast_sims
for i in 1 2 3; do
  java -Xmx96m -jar heartbeat-agent/target/heartbeat-agent.jar --kafka "$KAFKA" --node-id "fast-$i" \
    --url "http://127.0.0.1:1900$i" --backend ollama --interval 1s --nvidia-smi /nonexistent \
    > "$WORK/agent-$i.log" 2>&1 &
  PIDS+=($!)
done
# The embedded broker runs as a child process of the scheduler that hosts it: that child is stopped.
BROKER_PID=$(pgrep -P "${PIDS[0]}" | head -1)
[ -n "$BROKER_PID" ] || { echo "$NAME: the broker host has no broker process" >&2; exit 1; }

nginx_with "$(cat <<'NGINX'
  upstream replicas { server 127.0.0.1:19080 max_fails=0; server 127.0.0.1:19082 max_fails=0; server 127.0.0.1:19084 max_fails=0; keepalive 64; }
  server {
    listen 127.0.0.1:19090;
    location / { proxy_pass http://replicas; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; }
  }
NGINX
)"

REPLICA_PIDS=()
start_replicas() { # start_replicas TOPIC_A TOPIC_B TOPIC_C: the three replicas, each on its events topic
  local i port topic
  REPLICA_PIDS=()
  for i in 0 1 2; do
    port=$((19080 + 2 * i)); topic=${*:$((i + 1)):1}
    java -Xmx256m -jar scheduler/target/scheduler.jar --kafka "$KAFKA" --bind 127.0.0.1 --port "$port" \
      --admin-port $((port + 1)) --api-keys "$WORK/api-keys" --events-topic "$topic" \
      > "$WORK/replica-$i.log" 2>&1 &
    REPLICA_PIDS+=($!); PIDS+=($!)
  done
  for i in 0 1 2; do
    wait_for "$WORK/replica-$i.log" "proxy listening"
    wait_routable 3 $((19081 + 2 * i))
    for _ in $(seq 1 300); do
      [ "$(curl -s -o /dev/null -w '%{http_code}' "127.0.0.1:$((19081 + 2 * i))/readyz")" = 200 ] && break; sleep 0.1
    done
  done
}

stop_replicas() {
  local p
  for p in "${REPLICA_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${REPLICA_PIDS[@]}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; done
}

ROWS=()
SERIES=""
run_row() { # run_row LABEL OUTAGE(0|1) TOPIC_A TOPIC_B TOPIC_C
  local label=$1 outage=$2 out granted per_minute outage_granted
  shift 2
  start_replicas "$@"
  echo "[$label] warming up ${WARMUP}s, then measuring ${MEASURE}s..." >&2
  python3 bench/rate-client.py http://127.0.0.1:19090 "$KEY" "$RATE" "$WARMUP" > /dev/null
  local stopper=""
  if [ "$outage" = 1 ]; then
    ( sleep $((MEASURE / 2 - 5)); kill -STOP "$BROKER_PID"; sleep 10; kill -CONT "$BROKER_PID" ) &
    stopper=$!
  fi
  out=$(python3 bench/rate-client.py http://127.0.0.1:19090 "$KEY" "$RATE" "$MEASURE")
  [ -z "$stopper" ] || wait "$stopper"
  if [ -n "${RAW_DIR:-}" ]; then mkdir -p "$RAW_DIR"; echo "$out" > "$RAW_DIR/$label.txt"; fi
  granted=$(echo "$out" | tail -1 | python3 -c "import json,sys; print(json.load(sys.stdin)['granted'])")
  per_minute=$(python3 -c "print(f'{$granted * 60 / $MEASURE:.0f}')")
  outage_granted="-"
  if [ "$outage" = 1 ]; then
    outage_granted=$(echo "$out" | awk -v a=$((MEASURE / 2 - 5)) -v b=$((MEASURE / 2 + 5)) \
      'NF == 4 && $1 >= a && $1 < b { s += $2 } END { print s + 0 }')
  fi
  if [ "$outage" = 1 ]; then
    SERIES=$(echo "$out" | awk 'NF == 4 { s[int($1 / 5)] += $2 } END { for (i = 0; i in s; i++) printf "%s%d", (i ? ", " : ""), s[i] }')
  fi
  ROWS+=("| $label | $granted | $per_minute | $(python3 -c "print(f'{$per_minute / $LIMIT:.2f}x')") | $outage_granted | $(echo "$out" | tail -1 | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['other'])") |")
  stop_replicas
}

run_row separate 0 events-a events-b events-c
run_row shared 0 heartgate-gateway-events heartgate-gateway-events heartgate-gateway-events
run_row outage 1 heartgate-gateway-events-2 heartgate-gateway-events-2 heartgate-gateway-events-2

echo "## Limits across replicas $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
echo
echo "One key with rpm=$LIMIT offered $RATE requests/s through nginx over three replicas (one external"
echo "broker); ${WARMUP} s to spend the burst, then ${MEASURE} s counted. The outage row stops the broker for"
echo "the 10 s in the middle of the counted time."
echo
echo "| row | granted in ${MEASURE} s | per minute | x the limit | granted in the 10 s outage | errors |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${ROWS[@]}"
echo
echo "Outage row, granted per 5 s of the counted time (the broker stopped from $((MEASURE / 2 - 5)) s to $((MEASURE / 2 + 5)) s;"
echo "a steady $(python3 -c "print(f'{$LIMIT / 12:.0f}')") per 5 s is the limit): $SERIES"

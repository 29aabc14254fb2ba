#!/usr/bin/env bash
# The request path while heartbeats flow: three fast sims with their agents behind the scheduler,
# first alone (3 nodes listed), then beside a synthetic fleet of NODES at INTERVAL on the same topic
# (NODES + 3 listed; the fleet's nodes serve other models, so every request still goes to a sim).
# Small chat completions under wrk at 32 connections after a warm-up; per request, the CPU of the
# proxy's event loops alone (the threads named heartgate-proxy) and of the whole scheduler JVM. A
# broker of its own (the embedded one, in a scheduler that takes no traffic), as bench/heartbeats.sh.
#
#   bench/heartbeats-proxy.sh     # after: mvn -B -DskipTests package
#   NODES=100000 INTERVAL=5s WARMUP=30 RUNS=2 DURATION=15 bench/heartbeats-proxy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${NODES:-100000}
INTERVAL=${INTERVAL:-5s}
WARMUP=${WARMUP:-30}
RUNS=${RUNS:-2}
DURATION=${DURATION:-15}
NAME=bench/heartbeats-proxy.sh
# shellcheck source=bench/lib.sh
. bench/lib.sh
whole_numbers NODES WARMUP RUNS DURATION
duration_ms INTERVAL "$INTERVAL" > /dev/null

start_fast_sims
start_broker_host --events-topic hbproxy-host-events

thread_ticks() { # thread_ticks PID PREFIX: user+system clock ticks of PID's threads whose name starts with PREFIX
  local sum=0 t f
  for t in /proc/"$1"/task/*; do
    [[ $(cat "$t/comm" 2>/dev/null) == "$2"* ]] || continue
    read -r -a f < <(sed 's/^.*) //' "$t/stat")
    sum=$((sum + f[11] + f[12]))
  done
  echo "$sum"
}

measure() { # measure LABEL LISTED PID: warm-up, then RUNS table rows
  local label=$1 listed=$2 pid=$3 run loops0 all0 out loops1 all1 reqs rps errors
  MODEL=bench-fast wrk -t2 -c32 -d"${WARMUP}s" -s bench/chat-completion.lua http://127.0.0.1:19280 > /dev/null
  for run in $(seq 1 "$RUNS"); do
    loops0=$(thread_ticks "$pid" heartgate-proxy); all0=$(cpu_ticks "$pid")
    out=$(MODEL=bench-fast wrk -t2 -c32 -d"${DURATION}s" -s bench/chat-completion.lua http://127.0.0.1:19280)
    loops1=$(thread_ticks "$pid" heartgate-proxy); all1=$(cpu_ticks "$pid")
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    errors=$(echo "$out" | awk '/non-2xx or socket errors/ {print $NF}')
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    python3 -c "import sys; l, n, r, rps, a, b, t, e = sys.argv[1:]; n = int(n); tck = int(t); r = int(r)
print(f'| {l} | {n:,} | {float(rps):,.0f} | {int(a) / tck / r * 1e6:.1f} | {int(b) / tck / r * 1e6:.1f} | {e} |')" \
      "$label" "$listed" "$reqs" "$rps" $((loops1 - loops0)) $((all1 - all0)) "$(getconf CLK_TCK)" "${errors:-0}"
  done
}

scheduler_on() { # scheduler_on TOPIC: the scheduler under test and the sims' agents on TOPIC; sets SCHED
  java -Xmx2g -Duser.timezone=UTC -jar scheduler/target/scheduler.jar --kafka "$KAFKA" --topic "$1" \
    --events-topic "$1-events" --bind 127.0.0.1 --port 19280 --admin-port 19281 --strategy round-robin --allow-upstream 127.0.0.0/8 \
    > "$WORK/sched-$1.log" 2>&1 &
  SCHED=$!
  PIDS+=($SCHED)
  wait_for "$WORK/sched-$1.log" "proxy listening"
  local i
  for i in 1 2 3; do
    java -Xmx96m -jar heartbeat-agent/target/heartbeat-agent.jar --kafka "$KAFKA" --topic "$1" --node-id "fast-$i" \
      --url "http://127.0.0.1:1900$i" --backend ollama --interval 1s --nvidia-smi /nonexistent \
      > "$WORK/agent-$1-$i.log" 2>&1 &
    AGENTS+=($!)
    PIDS+=($!)
  done
  for _ in $(seq 1 600); do
    [ "$(curl -s "127.0.0.1:19281/admin/nodes?model=bench-fast&routable=true&limit=10" | grep -o '"routable":true' | wc -l)" -eq 3 ] && return 0
    sleep 0.2
  done
  echo "$NAME: the three sims did not become routable on $1" >&2; exit 1
}

listed() { curl -s http://127.0.0.1:19281/admin/summary | python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"])' 2>/dev/null || echo 0; }

echo "## The request path while heartbeats flow $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(java -version 2>&1 | head -1)"
echo
echo "Small chat completions at 32 connections, ${RUNS} runs of ${DURATION} s after ${WARMUP} s of warm-up; the fleet at ${INTERVAL}."
echo
echo "| scheduler | nodes listed | requests/s | event loops' CPU, us/request | whole JVM's CPU, us/request | non-2xx or socket errors |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
AGENTS=()
scheduler_on "hbproxy-alone-$RANDOM"
measure "3 sims alone" "$(listed)" "$SCHED"
kill "${AGENTS[@]}" "$SCHED"; wait "${AGENTS[@]}" "$SCHED" 2>/dev/null || true
AGENTS=()

topic="hbproxy-fleet-$RANDOM"
scheduler_on "$topic"
java -Xmx1g -cp heartbeat-agent/target/heartbeat-agent.jar io.heartgate.agent.fleet.SyntheticFleet \
  --kafka "$KAFKA" --topic "$topic" --nodes "$NODES" --interval "$INTERVAL" --report-every 5s \
  > "$WORK/fleet.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 300); do [ "$(listed)" -ge $((NODES * 95 / 100)) ] && break; sleep 1; done
measure "3 sims beside the fleet" "$(listed)" "$SCHED"
curl -s -o /dev/null -w "one request beside the fleet: HTTP %{http_code}\n" http://127.0.0.1:19280/v1/chat/completions \
  -H 'Content-Type: application/json' -d '{"model":"bench-fast","messages":[{"role":"user","content":"hi"}]}' >&2

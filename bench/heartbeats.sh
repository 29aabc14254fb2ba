#!/usr/bin/env bash
# Heartbeats at scale, one command: a broker (the embedded one, in a scheduler of its own that takes
# no traffic), a synthetic fleet of N nodes at INTERVAL (heartbeat-agent.jar's SyntheticFleet: the
# agent's publisher and producer settings, loopback URLs no request ever goes to, a share dying,
# joining and flapping per minute), and the scheduler under test reading it. After WARMUP, MEASURE
# seconds of: the scheduler's CPU, in total and per heartbeat applied; its RSS and heap after a GC;
# consumer lag (/readyz's kafkaLag each second: p99 and max); the nodes it lists and those routable
# against the fleet. Prints a Markdown table, one row per N.
#
#   bench/heartbeats.sh                                # after: mvn -B -DskipTests package
#   CHURN=0.02 NODES="1000 10000 100000" WARMUP=40 MEASURE=40 bench/heartbeats.sh
#
# CHURN is the share of the fleet that dies per minute, and as many come back (a new instance) and
# flap (one DOWN beat). Nothing is sent off this machine: every node is on 127.x.y.z.
#
# Then the scheduler is killed (SIGKILL) and started again among the running fleet: the seconds from
# its start to /readyz answering 200, how many records it read to get there, and its table against
# the fleet's (live nodes missing, dead ones revived: bench/restart-check.py).
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${NODES:-"1000 10000"}
INTERVAL=${INTERVAL:-1s}
CHURN=${CHURN:-0.01}
WARMUP=${WARMUP:-30}
MEASURE=${MEASURE:-60}
SCHED_OPTS=${SCHED_OPTS:-"-Xmx2g"}
NAME=bench/heartbeats.sh
# shellcheck source=bench/lib.sh
. bench/lib.sh

whole_numbers NODES WARMUP MEASURE
interval_ms=$(duration_ms INTERVAL "$INTERVAL")

start_broker_host --events-topic scale-host-events
scheduler() { # scheduler TOPIC LOG: starts the scheduler under test reading TOPIC; sets sched
  # shellcheck disable=SC2086 # options are words on purpose
  java $SCHED_OPTS -Duser.timezone=UTC -jar scheduler/target/scheduler.jar --kafka "$KAFKA" --topic "$1" \
    --events-topic "$1-events" --bind 127.0.0.1 --port 19280 --admin-port 19281 --allow-upstream 127.0.0.0/8 > "$2" 2>&1 &
  sched=$!
  PIDS+=($sched)
}
rows=()
for n in $NODES; do
  topic="scale-$n-$RANDOM"
  scheduler "$topic" "$WORK/sched-$n.log"
  wait_for "$WORK/sched-$n.log" "proxy listening"
  java -Xmx1g -cp heartbeat-agent/target/heartbeat-agent.jar io.heartgate.agent.fleet.SyntheticFleet \
    --kafka "$KAFKA" --topic "$topic" --nodes "$n" --interval "$INTERVAL" --die-per-minute "$CHURN" \
    --join-per-minute "$CHURN" --flap-per-minute "$CHURN" --report-every 5s --events "$WORK/events-$n.txt" \
    > "$WORK/fleet-$n.log" 2>&1 &
  fleet=$!
  PIDS+=($fleet)
  listed=0
  for _ in $(seq 1 300); do
    listed=$(curl -s http://127.0.0.1:19281/admin/summary | python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"])' 2>/dev/null || echo 0)
    [ "$listed" -ge $((n * 95 / 100)) ] && break
    sleep 1
  done
  [ "$listed" -ge $((n * 95 / 100)) ] || echo "$NAME: $n nodes: only $listed listed after 300 s; measured anyway" >&2
  sleep "$WARMUP"
  received() { curl -s http://127.0.0.1:19281/metrics | awk '/^heartgate_heartbeats_received_total/ {print int($2)}'; }
  r0=$(received); before=$(cpu_ticks "$sched"); t0=$(date +%s.%N); w0=$(date +%s%3N)
  : > "$WORK/lag-$n.txt"
  for _ in $(seq 1 "$MEASURE"); do
    curl -s http://127.0.0.1:19281/readyz | python3 -c 'import json,sys; print(json.load(sys.stdin)["kafkaLag"])' \
      >> "$WORK/lag-$n.txt" 2>/dev/null || true
    sleep 1
  done
  after=$(cpu_ticks "$sched"); t1=$(date +%s.%N); r1=$(received); w1=$(date +%s%3N)
  sleep 6 # the deaths of the window's last seconds expire after it
  timing=$(python3 bench/churn-timing.py "$WORK/events-$n.txt" "$WORK/sched-$n.log" "$w0" "$w1")
  summary=$(curl -s http://127.0.0.1:19281/admin/summary)
  rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$sched/status" 2>/dev/null || echo 0)
  jcmd "$sched" GC.run > /dev/null 2>&1 || true
  heap=$(jcmd "$sched" GC.heap_info 2>/dev/null | grep -o 'used [0-9]*K' | head -1 | awk '{print int($2 / 1024)}' || true)
  fleet_line=$(grep -E '^t=' "$WORK/fleet-$n.log" | tail -1 || true)
  # A restart among the running fleet: kill, start again, time to ready, and the table it is ready with.
  kill -9 "$sched" 2>/dev/null || true; wait "$sched" 2>/dev/null || true
  started=$(date +%s%3N)
  scheduler "$topic" "$WORK/sched-$n-restart.log"
  ready=0
  for _ in $(seq 1 1200); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:19281/readyz)" = 200 ]; then ready=$(date +%s%3N); break; fi
    sleep 0.1
  done
  if [ "$ready" -gt 0 ]; then
    check=$(python3 bench/restart-check.py "$WORK/events-$n.txt" http://127.0.0.1:19281 "$ready" $((3 * interval_ms)) "$interval_ms")
    read_back=$(grep -o 'from [^ ]* ago ([^;]*; [0-9]* records' "$WORK/sched-$n-restart.log" | head -1 | sed 's/.*; //')
    restart="$(python3 -c "import sys; print(f'{(int(sys.argv[2]) - int(sys.argv[1])) / 1000:.1f}')" "$started" "$ready") s, ${read_back:-?} | ${check% *} / ${check#* }"
  else
    restart="not ready in 120 s | -"
  fi
  rows+=("$(python3 - "$n" "$before" "$after" "$t0" "$t1" "$r0" "$r1" "$rss" "${heap:-0}" "$WORK/lag-$n.txt" "$summary" "$fleet_line" "$(getconf CLK_TCK)" "$timing" "$restart" <<'PY'
import json, sys
n, before, after, t0, t1, r0, r1, rss, heap, lagfile, summary, fleet, tck, timing, restart = sys.argv[1:]
secs = float(t1) - float(t0)
cpu = (int(after) - int(before)) / int(tck)
beats = int(r1) - int(r0)
lags = sorted(int(l) for l in open(lagfile) if l.strip().lstrip('-').isdigit())
p99 = lags[min(len(lags) - 1, int(len(lags) * 0.99))] if lags else -1
s = json.loads(summary)
live = [w for w in fleet.split() if w.startswith("live=")]
print(f"| {int(n):,} | {beats / secs:,.0f} | {cpu / secs * 100:.0f}% | {cpu / max(beats, 1) * 1e6:.1f} | "
      f"{p99:,} / {max(lags) if lags else -1:,} | {int(rss):,} | {int(heap):,} | {s['nodes']:,} / {s['routable']:,} | "
      f"{live[0][5:] if live else '?'} | {timing} | {restart} |")
PY
)")
  kill "$fleet" "$sched" 2>/dev/null || true; wait "$fleet" "$sched" 2>/dev/null || true
done

echo "## Heartbeats at scale $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(java -version 2>&1 | head -1)"
echo
echo "Interval $INTERVAL, churn $CHURN of the fleet per minute (dying, coming back, flapping each), ${WARMUP} s after"
echo "95% were listed, then ${MEASURE} s measured; then the scheduler killed and started again among the fleet."
echo "The broker, the fleet and the scheduler share the machine."
echo
echo "| nodes | heartbeats/s applied | scheduler CPU, % of a core | CPU per heartbeat, us | lag p99 / max, records | RSS, MiB | heap after GC, MiB | listed / routable | fleet live | join to listed p99 (n), ms | last beat to expiry p99 (n), ms | restart: start to ready, records read | live missing / dead revived |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"

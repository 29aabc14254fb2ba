#!/usr/bin/env bash
# Replicas agreeing, one command: a broker (the embedded one, in a scheduler of its own), a synthetic
# fleet of N nodes (heartbeat-agent.jar's SyntheticFleet, a share dying, coming back and flapping per
# minute) and three scheduler replicas on one heartbeat topic and one events topic. Once every
# replica lists the fleet, their routable sets are compared once a second for MEASURE seconds
# (bench/replicas-agree.py: differences not explained by a node joining, dying or flapping recently
# and a second); then the third replica is killed (SIGKILL) and started again: seconds to /readyz
# 200, and the same comparison for 10 s. Prints Markdown.
#
#   bench/replicas-agree.sh                     # after: mvn -B -DskipTests package
#   NODES=2000 INTERVAL=1s CHURN=0.02 MEASURE=60 bench/replicas-agree.sh
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${NODES:-2000}
INTERVAL=${INTERVAL:-1s}
CHURN=${CHURN:-0.02}
MEASURE=${MEASURE:-60}
NAME=bench/replicas-agree.sh
# shellcheck source=bench/lib.sh
. bench/lib.sh

whole_numbers NODES MEASURE
interval_ms=$(duration_ms INTERVAL "$INTERVAL")

start_broker_host --events-topic agree-host-events
topic="agree-$RANDOM"
replica() { # replica I: starts replica I (ports 1938I0/1938I1) and sets PID_I
  java -Xmx1g -Duser.timezone=UTC -jar scheduler/target/scheduler.jar --kafka "$KAFKA" --topic "$topic" \
    --events-topic "$topic-events" --bind 127.0.0.1 --port "193${1}0" --admin-port "193${1}1" \
    --allow-upstream 127.0.0.0/8 > "$WORK/replica-$1.log" 2>&1 &
  PIDS+=($!)
  eval "PID_$1=$!"
}
for i in 1 2 3; do replica "$i"; done
for i in 1 2 3; do wait_for "$WORK/replica-$i.log" "proxy listening"; done
java -Xmx1g -cp heartbeat-agent/target/heartbeat-agent.jar io.heartgate.agent.fleet.SyntheticFleet \
  --kafka "$KAFKA" --topic "$topic" --nodes "$NODES" --interval "$INTERVAL" --die-per-minute "$CHURN" \
  --join-per-minute "$CHURN" --flap-per-minute "$CHURN" --report-every 5s --events "$WORK/events.txt" \
  > "$WORK/fleet.log" 2>&1 &
PIDS+=($!)
listed() { curl -s "http://127.0.0.1:193${1}1/admin/summary" | python3 -c 'import json,sys; print(json.load(sys.stdin)["nodes"])' 2>/dev/null || echo 0; }
for _ in $(seq 1 300); do
  [ "$(listed 1)" -ge $((NODES * 95 / 100)) ] && [ "$(listed 2)" -ge $((NODES * 95 / 100)) ] \
    && [ "$(listed 3)" -ge $((NODES * 95 / 100)) ] && break
  sleep 1
done
admins=(http://127.0.0.1:19311 http://127.0.0.1:19321 http://127.0.0.1:19331)
steady=$(python3 bench/replicas-agree.py "$WORK/events.txt" $((3 * interval_ms)) "$interval_ms" "$MEASURE" "${admins[@]}")
kill -9 "$PID_3" 2>/dev/null || true
started=$(date +%s%3N)
replica 3
ready=0
for _ in $(seq 1 1200); do
  if [ "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:19331/readyz)" = 200 ]; then ready=$(date +%s%3N); break; fi
  sleep 0.1
done
after=$(python3 bench/replicas-agree.py "$WORK/events.txt" $((3 * interval_ms)) "$interval_ms" 10 "${admins[@]}")

echo "## Replicas agreeing $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(java -version 2>&1 | head -1)"
echo
echo "$NODES nodes at $INTERVAL, churn $CHURN of the fleet a minute (dying, coming back, flapping each); three"
echo "replicas, the broker and the fleet on this machine. Routable sets compared once a second."
echo
echo "| replicas | comparisons | routable, last comparison | most nodes differing | differences unexplained | of those, lasting two comparisons |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
echo "$steady"
echo
if [ "$ready" -gt 0 ]; then
  echo "Replica 3 killed and started again: ready in $(python3 -c "import sys; print(f'{(int(sys.argv[2]) - int(sys.argv[1])) / 1000:.1f}')" "$started" "$ready") s; the 10 s after:"
else
  echo "Replica 3 killed and started again: not ready within 120 s; the 10 s after:"
fi
echo
echo "| replicas | comparisons | routable, last comparison | most nodes differing | differences unexplained | of those, lasting two comparisons |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
echo "$after"

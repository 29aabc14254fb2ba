#!/usr/bin/env bash
# The floor under a restart at scale: a synthetic fleet of N nodes at INTERVAL through the embedded
# broker (as bench/heartbeats.sh runs it), then, in turns, (a) a bare Kafka consumer in a new JVM
# (bench/BareConsumer.java) reading back one expiry (3 intervals, the scheduler's look-back) and (b)
# one interval (the least a restart from a snapshot of the table could read), each to the end
# offsets and in rounds until one takes less than an interval, touching only the keys; and (c) the
# scheduler itself, following the fleet from its start, killed and started again to /readyz 200
# (once: a restart after a pause reads the pause too).
# Prints a Markdown table of seconds from each JVM's start to ready and the records each read.
#
#   bench/restart-floor.sh        # after: mvn -B -DskipTests package (and the Maven repository filled)
#   NODES=100000 INTERVAL=5s WARMUP=60 RUNS=2 bench/restart-floor.sh
#   SCHED_OPTS=-XX:StartFlightRecording=filename=/tmp/restart.jfr,settings=profile,duration=60s bench/restart-floor.sh
set -euo pipefail
cd "$(dirname "$0")/.."
NODES=${NODES:-100000}
INTERVAL=${INTERVAL:-5s}
WARMUP=${WARMUP:-60}
RUNS=${RUNS:-2}
NAME=bench/restart-floor.sh
# shellcheck source=bench/lib.sh
. bench/lib.sh
whole_numbers NODES WARMUP RUNS
interval_ms=$(duration_ms INTERVAL "$INTERVAL")
mvn -B -q -o dependency:build-classpath -pl heartbeat-agent -Dmdep.includeScope=runtime \
  -Dmdep.outputFile="$WORK/cp.txt" > /dev/null
CP=$(tr ':' '\n' < "$WORK/cp.txt" | grep -E '/(kafka-clients|zstd-jni|lz4-java|snappy-java|slf4j-api)-' | paste -sd:)
NOP=$(find ~/.m2/repository/org/slf4j/slf4j-nop -name 'slf4j-nop-2*.jar' | sort | tail -1)
# Compiled first: a source file launched as such brings the compiler into the measured JVM.
javac -cp "$CP" -d "$WORK/classes" bench/BareConsumer.java

SCHED=""
scheduler() { # starts the scheduler under test reading the fleet's topic; sets SCHED
  java -Xmx2g ${SCHED_OPTS:-} -Duser.timezone=UTC -jar scheduler/target/scheduler.jar --kafka "$KAFKA" --topic "$topic" \
    --events-topic "$topic-events" --bind 127.0.0.1 --port 19280 --admin-port 19281 --allow-upstream 127.0.0.0/8 \
    > "$1" 2>&1 &
  SCHED=$!
  PIDS+=($SCHED)
}

restart() { # one table row: the running scheduler killed, started again, timed to /readyz 200
  local log="$WORK/sched-$RANDOM.log" t0 t1 records
  kill -9 "$SCHED"; wait "$SCHED" 2>/dev/null || true
  t0=$(date +%s%N)
  scheduler "$log"
  for _ in $(seq 1 3000); do curl -sf -o /dev/null http://127.0.0.1:19281/readyz && break; sleep 0.02; done
  t1=$(date +%s%N)
  records=$(grep -o 'from [^ ]* ago ([^;]*; [0-9]* records' "$log" | head -1 | sed 's/.*; //; s/ records//')
  echo "| the scheduler, restarted (one expiry and the rounds after, decoded and applied) | $(python3 -c "print(f'{($t1 - $t0) / 1e9:.1f}')") | ${records:-?} | - | - |"
}

start_broker_host --events-topic floor-host-events
topic="floor-$NODES-$RANDOM"
scheduler "$WORK/sched-first.log" # follows the fleet from its start, as a running replica does
wait_for "$WORK/sched-first.log" "proxy listening"
java -Xmx1g -cp heartbeat-agent/target/heartbeat-agent.jar io.heartgate.agent.fleet.SyntheticFleet \
  --kafka "$KAFKA" --topic "$topic" --nodes "$NODES" --interval "$INTERVAL" --die-per-minute 0.02 \
  --join-per-minute 0.02 --flap-per-minute 0.02 --report-every 5s > "$WORK/fleet.log" 2>&1 &
PIDS+=($!)
echo "Fleet of $NODES nodes at $INTERVAL; ${WARMUP}s before the first restart..." >&2
sleep "$WARMUP"

bare() { # bare LABEL LOOKBACK_MS: one table row
  local out
  out=$(java -cp "$WORK/classes:$CP:$NOP" BareConsumer "$KAFKA" "$topic" "$2" "$interval_ms")
  python3 - "$1" "$out" <<'PY'
import sys
label, out = sys.argv[1], dict(kv.split("=") for kv in sys.argv[2].split())
print(f"| {label} | {int(out['ready_ms']) / 1000:.1f} | {out['records']} | {out['rounds']} | {out['keys']} |")
PY
}

echo "## Restart floor $(date -u +%Y-%m-%dT%H:%MZ), $NODES nodes at $INTERVAL, $(nproc) cores, $(java -version 2>&1 | head -1)"
echo
echo "| reader | seconds from JVM start to ready | records read | rounds | node ids seen |"
echo "| --- | ---: | ---: | ---: | ---: |"
# The restart first, from a scheduler that has followed the fleet all along; then the bare readers,
# with no scheduler running, as the restarted one had none beside it.
restart
sleep 20
kill -9 "$SCHED"; wait "$SCHED" 2>/dev/null || true
for _ in $(seq 1 "$RUNS"); do
  bare "bare consumer, one expiry (3 intervals)" $((3 * interval_ms))
  sleep 5
  bare "bare consumer, one interval" "$interval_ms"
  sleep 5
done

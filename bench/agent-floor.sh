#!/usr/bin/env bash
# The floor under the agent's footprint: a bare Kafka producer (bench/BareProducer.java, one record a
# second, nothing else) and an empty JVM, each with the agent's light JVM settings, measured as
# bench/agent-footprint.sh measures the agent. Prints a Markdown table.
#
#   bench/agent-floor.sh          # after: mvn -B -DskipTests package (and the Maven repository filled)
set -euo pipefail
cd "$(dirname "$0")/.."
WARMUP=${WARMUP:-45}
MEASURE=${MEASURE:-60}
LIGHT_OPTS="-Xmx24m -Xss256k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:ReservedCodeCacheSize=12m -XX:-UsePerfData"
NAME=bench/agent-floor.sh
# shellcheck source=bench/lib.sh
. bench/lib.sh
mvn -B -q -o dependency:build-classpath -pl heartbeat-agent -Dmdep.includeScope=runtime \
  -Dmdep.outputFile="$WORK/cp.txt" > /dev/null
CP=$(tr ':' '\n' < "$WORK/cp.txt" | grep -E '/(kafka-clients|zstd-jni|lz4-java|snappy-java|slf4j-api)-' | paste -sd:)
NOP=$(find ~/.m2/repository/org/slf4j/slf4j-nop -name 'slf4j-nop-2*.jar' | sort | tail -1)
start_broker_host --events-topic floor-events

measure() { # LABEL COMMAND...: runs the command, samples it after the warm-up, prints a table row
  local label=$1; shift
  "$@" > "$WORK/floor.log" 2>&1 &
  local pid=$!
  PIDS+=($pid)
  sleep "$WARMUP"
  local before t0 after t1 rss
  before=$(cpu_ticks "$pid"); t0=$(date +%s.%N)
  sleep "$MEASURE"
  after=$(cpu_ticks "$pid"); t1=$(date +%s.%N)
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  echo "| $label | $((rss / 1024)) | $(python3 -c "print(f'{($after-$before)/$(getconf CLK_TCK)/($t1-$t0)*100:.2f}')") |"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

echo "## The agent's floor $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(java -version 2>&1 | head -1)"
echo
echo "Light settings: \`$LIGHT_OPTS\`; ${WARMUP} s warm-up, then ${MEASURE} s."
echo
echo "| program | RSS, MiB | CPU, % of one core |"
echo "| --- | ---: | ---: |"
# Compiled first: a source file launched as such brings the compiler into the measured JVM.
printf 'public class Idle { public static void main(String[] a) throws Exception { Thread.sleep(Long.MAX_VALUE); } }\n' > "$WORK/Idle.java"
javac -cp "$CP" -d "$WORK/classes" bench/BareProducer.java "$WORK/Idle.java"
# shellcheck disable=SC2086 # options are words on purpose
measure "bare Kafka producer, a record a second" java $LIGHT_OPTS -cp "$WORK/classes:$CP:$NOP" BareProducer "$KAFKA"
# shellcheck disable=SC2086
measure "an idle JVM (Thread.sleep)" java $LIGHT_OPTS -cp "$WORK/classes" Idle

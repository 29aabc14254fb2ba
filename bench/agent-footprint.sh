#!/usr/bin/env bash
# The agent's footprint at a 1 s interval, one command: a simulated node and a broker, then the agent
# started with each set of JVM options in turn, measured after a warm-up: resident memory (VmRSS,
# and its peak) and CPU (user+system) as a share of one core. Prints a Markdown table.
#
#   bench/agent-footprint.sh                             # after: mvn -B -DskipTests package
#   WARMUP=60 MEASURE=120 bench/agent-footprint.sh "default|" "light|-Xmx24m -XX:+UseSerialGC"
#   AGENT_JAVA=/path/to/runtime/bin/java bench/agent-footprint.sh   # the agent on another runtime (the image's)
#
# Needs what bench/proxy.sh needs.
set -euo pipefail
cd "$(dirname "$0")/.."
WARMUP=${WARMUP:-45}
MEASURE=${MEASURE:-60}
for setting in WARMUP MEASURE; do
  case ${!setting} in ''|*[!0-9]*|0) echo "bench/agent-footprint.sh: $setting must be a positive whole number, was '${!setting}'" >&2; exit 2 ;; esac
done
# What deploy/kubernetes and deploy/systemd give the agent (docs/BENCHMARKS.md, the agent's footprint).
LIGHT_LABEL="manifests and systemd"
LIGHT_OPTS="-Xmx24m -Xss256k -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:CICompilerCount=1 -XX:ReservedCodeCacheSize=12m -XX:-UsePerfData"
NAME=bench/agent-footprint.sh
# shellcheck source=bench/lib.sh
. bench/lib.sh
if [ $# -eq 0 ]; then
  # The manifests' and the systemd unit's settings, and none (the JVM's defaults).
  set -- "$LIGHT_LABEL|$LIGHT_OPTS" "jvm defaults|"
fi

start_broker_host --events-topic footprint-events
java -Xmx128m -jar inference-sim/target/inference-sim.jar --port 19001 --name fp-1 --models bench-fast \
  > "$WORK/sim.log" 2>&1 &
PIDS+=($!)
wait_for "$WORK/sim.log" "listening"

rows=()
for variant in "$@"; do
  label=${variant%%|*}; opts=${variant#*|}
  # shellcheck disable=SC2086 # options are words on purpose
  "${AGENT_JAVA:-java}" $opts -jar heartbeat-agent/target/heartbeat-agent.jar --kafka "$KAFKA" --node-id fp-1 \
    --url http://127.0.0.1:19001 --backend ollama --interval 1s --nvidia-smi /nonexistent > "$WORK/agent.log" 2>&1 &
  agent=$!
  PIDS+=($agent)
  sleep "$WARMUP"
  before=$(cpu_ticks "$agent"); t0=$(date +%s.%N)
  max_rss=0
  for _ in $(seq 1 "$MEASURE"); do
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$agent/status")
    [ "$rss" -gt "$max_rss" ] && max_rss=$rss
    sleep 1
  done
  after=$(cpu_ticks "$agent"); t1=$(date +%s.%N)
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$agent/status")
  hwm=$(awk '/VmHWM/ {print $2}' "/proc/$agent/status")
  sent=$(grep -c "" "$WORK/agent.log" || true)
  cpu=$(python3 -c "print(f'{($after-$before)/$(getconf CLK_TCK)/($t1-$t0)*100:.2f}')")
  rows+=("| $label | \`${opts:-(none)}\` | $((rss / 1024)) | $((max_rss / 1024)) | $((hwm / 1024)) | $cpu |")
  kill "$agent"; wait "$agent" 2>/dev/null || true
done

echo "## Agent footprint $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $("${AGENT_JAVA:-java}" -version 2>&1 | head -1) (${AGENT_JAVA:-java})"
echo
echo "One agent, one simulated Ollama node, 1 s interval, ${WARMUP} s warm-up, then ${MEASURE} s sampled each second."
echo
echo "| JVM settings | options | RSS at the end, MiB | RSS max sampled, MiB | RSS peak (VmHWM), MiB | CPU, % of one core |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"

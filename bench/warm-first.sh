#!/usr/bin/env bash
# Warm-first benchmark: four simulated Ollama nodes that each hold one model in memory (loading
# another takes LOAD_TIME and evicts the least recently used), four models, open-loop chat traffic
# from loadgen at RATE requests/s (well below the fleet's capacity when warm), a uniform and a skewed
# (70/10/10/10) model mix. Rows: the scheduler with round-robin and least-loaded, each without and
# with warm-first, and nginx round robin in front of the same nodes. Every row starts from cold nodes
# (sims and agents restarted), runs WARMUP seconds of the same traffic unmeasured, then DURATION
# seconds measured. Prints a table: model loads per 1,000 requests, requests that waited on a load,
# p50/p99 time to first token and total time; writes every loadgen result and the table as JSON.
#
#   bench/warm-first.sh                       # about 15 minutes; after: mvn -B -DskipTests package
#   RATE=3 DURATION=60 WARMUP=15 LOAD_TIME=1s OUT=/tmp/warm-first bench/warm-first.sh
#   ROWS="round-robin least-loaded+warm" MIXES=skewed bench/warm-first.sh   # a subset
set -uo pipefail
cd "$(dirname "$0")/.."
NAME=bench/warm-first.sh
RATE=${RATE:-3}; DURATION=${DURATION:-60}; WARMUP=${WARMUP:-15}; LOAD_TIME=${LOAD_TIME:-1s}
ROWS=${ROWS:-"round-robin least-loaded round-robin+warm least-loaded+warm nginx"}
MIXES=${MIXES:-"uniform skewed"}
OUT=${OUT:-/tmp/heartgate-warm-first-$(date -u +%Y%m%dT%H%M%SZ)}
MODELS="llama3:8b qwen2.5:7b mistral:7b phi3:mini"
declare -A MIX=(
  [uniform]="llama3:8b=25,qwen2.5:7b=25,mistral:7b=25,phi3:mini=25"
  [skewed]="llama3:8b=70,qwen2.5:7b=10,mistral:7b=10,phi3:mini=10"
)
# shellcheck source=bench/lib.sh
. bench/lib.sh
[ -f loadgen/target/loadgen.jar ] || { echo "$NAME: loadgen/target/loadgen.jar missing; run mvn -B -DskipTests package" >&2; exit 2; }
mkdir -p "$OUT"

# The embedded broker lives in a scheduler of its own that takes no traffic, so that each row's
# scheduler can start fresh with its own flags while the agents keep publishing.
start_broker_host

NODE_PIDS=()
start_nodes() { # four cold sims, each with its agent (1 s heartbeats)
  local models
  models=$(echo "$MODELS" | tr ' ' ',')
  for i in 1 2 3 4; do
    java -Xmx128m -XX:+UseSerialGC -jar inference-sim/target/inference-sim.jar --port 1930$i --name gpu-$i \
      --models "$models" --max-loaded-models 1 --load-time "$LOAD_TIME" --tokens 32 --token-delay 10ms \
      --first-token-delay 50ms --max-concurrency 4 > "$WORK/sim-$i.log" 2>&1 &
    NODE_PIDS+=($!); PIDS+=($!)
  done
  for i in 1 2 3 4; do wait_for "$WORK/sim-$i.log" "listening"; done
  for i in 1 2 3 4; do
    java -Xmx96m -XX:+UseSerialGC -jar heartbeat-agent/target/heartbeat-agent.jar --kafka "$KAFKA" \
      --node-id "gpu-$i" --url "http://127.0.0.1:1930$i" --backend ollama --interval 1s \
      --nvidia-smi /nonexistent > "$WORK/agent-$i.log" 2>&1 &
    NODE_PIDS+=($!); PIDS+=($!)
  done
}

model_loads() { # the four sims' model loads so far
  local sum=0 n
  for i in 1 2 3 4; do
    n=$(curl -s "127.0.0.1:1930$i/sim/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["modelLoads"])')
    sum=$((sum + n))
  done
  echo "$sum"
}

nginx_with "$(cat <<NGINX
  upstream fleet { server 127.0.0.1:19301; server 127.0.0.1:19302; server 127.0.0.1:19303; server 127.0.0.1:19304; keepalive 64; }
  server {
    listen 127.0.0.1:19390;
    location / { proxy_pass http://fleet; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; }
  }
NGINX
)"

row() { # row MIX ROW: one measured row, its loadgen JSON and a line of rows.jsonl
  local mix=$1 name=$2 port strategy flags=() sched="" before after label=$1/$2
  start_nodes
  case $name in
    nginx) port=19390 ;;
    *)
      port=19080
      strategy=${name%+warm}
      [ "$name" = "$strategy" ] && flags=(--warm-first=false)
      java -Xmx512m -jar scheduler/target/scheduler.jar --kafka "$KAFKA" --bind 127.0.0.1 --port 19080 \
        --admin-port 19081 --strategy "$strategy" --events-topic "bench-events-$(date +%s%N)" "${flags[@]}" \
        > "$WORK/scheduler-$mix-$name.log" 2>&1 & # rows share nothing
      sched=$!; PIDS+=($sched)
      wait_for "$WORK/scheduler-$mix-$name.log" "proxy listening"
      ;;
  esac
  [ -n "$sched" ] && wait_routable 4 # every node in the table before any traffic
  java -Xmx256m -jar loadgen/target/loadgen.jar --url "http://127.0.0.1:$port" --api ollama --rate "$RATE" \
    --duration "${WARMUP}s" --mix "${MIX[$mix]}" --seed 7 --timeout 60s --label "warm-up" \
    --out "$OUT/$mix-$name-warmup.json" > /dev/null
  before=$(model_loads)
  java -Xmx256m -jar loadgen/target/loadgen.jar --url "http://127.0.0.1:$port" --api ollama --rate "$RATE" \
    --duration "${DURATION}s" --mix "${MIX[$mix]}" --seed 1 --timeout 60s --label "$label" \
    --out "$OUT/$mix-$name.json" > /dev/null
  after=$(model_loads)
  python3 - "$OUT/$mix-$name.json" "$mix" "$name" "$((after - before))" >> "$OUT/rows.jsonl" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["counts"]
loads = int(sys.argv[4])
print(json.dumps({"mix": sys.argv[2], "row": sys.argv[3], "sent": c["sent"], "ok": c["ok"], "failed": c["failed"],
                  "loads": loads, "loadsPer1000": round(1000 * loads / max(1, c["sent"]), 1),
                  "waitedOnLoad": r["waitedOnLoad"], "ttftP50": r["ttftMs"]["p50"], "ttftP99": r["ttftMs"]["p99"],
                  "totalP50": r["totalMs"]["p50"], "totalP99": r["totalMs"]["p99"]}))
PY
  if [ -n "$sched" ]; then kill "$sched"; while kill -0 "$sched" 2>/dev/null; do sleep 0.1; done; fi
  stop_nodes 4
  tail -1 "$OUT/rows.jsonl" >&2
}

: > "$OUT/rows.jsonl"
for mix in $MIXES; do
  for name in $ROWS; do row "$mix" "$name"; done
done

echo
echo "## Warm-first benchmark $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
echo
echo "4 sims x 1 model in memory (load ${LOAD_TIME}, evicting LRU), 4 models, 4 slots each, 32 tokens of 10 ms"
echo "after 50 ms; open-loop Poisson arrivals at ${RATE}/s via Ollama /api/chat streams; ${WARMUP} s warm-up"
echo "unmeasured, then ${DURATION} s measured per row; every row from cold nodes. Times in ms."
echo
python3 - "$OUT/rows.jsonl" "$OUT/summary.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump(rows, open(sys.argv[2], "w"), indent=2)
print("| mix | row | sent | failed | loads / 1000 | waited on a load | TTFT p50 | TTFT p99 | total p50 | total p99 |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    print(f"| {r['mix']} | {r['row']} | {r['sent']} | {r['failed']} | {r['loadsPer1000']} | {r['waitedOnLoad']} |"
          f" {r['ttftP50']} | {r['ttftP99']} | {r['totalP50']} | {r['totalP99']} |")
PY
echo
echo "Results: $OUT (one loadgen JSON per row, rows.jsonl, summary.json)"

#!/usr/bin/env bash
# Cache-affinity benchmark on simulated vLLM nodes with a prefix cache and a prefill cost.
#
# NODES sims of SLOTS slots each (agents report the capacity), each with a KV cache of KV_BLOCKS
# blocks of BLOCK characters and a prefill of PREFILL per uncached token (4 characters), added to
# FIRST_TOKEN before the first token; answers of TOKENS tokens at TOKEN_DELAY. The workload:
# conversations of TURNS turns whose history grows (each turn resends it), opening with one of
# SYSTEM_PROMPTS shared system prompts of SYSTEM_WORDS words, user messages of PROMPT_WORDS words,
# THINK between an answer and the next turn, RATE requests/s (Poisson) for DURATION s: below the
# fleet's capacity. Half the conversations (SESSION_SHARE) send X-Session-Id, the rest nothing.
#
# Rows (fresh sims, cold caches, for each): the scheduler's round-robin, least-loaded and affinity
# (capacity and the gateway queue; affinity@C is affinity with --affinity-load-factor C), nginx
# round robin, nginx `hash $http_x_session_id consistent`,
# and HAProxy `balance hdr(X-Session-Id)` with `hash-type consistent` and `hash-balance-factor 125`.
# Per row: mean/p50/p99 time to first token, the sims' prefix-cache hit rate (tokens), and the spread
# of load: requests running or waiting per node sampled each second, reported as max/mean over
# the nodes of each node's mean over the run (how evenly the work was shared), and as the mean over
# seconds of that second's max/mean (which, with a few requests per node, counting noise dominates).
#
# Then the membership run (affinity, MOVE_DURATION s): the same load; at a third of it a fifth
# node joins, at two thirds the first leaves. A conversation's own node is where its turns answered
# X-Heartgate-Affinity: hit went; for every conversation with hits before a change and after it, it
# counts whether its own node changed (spilled turns do not count). The check: between consecutive
# hits with no change in between, the share that changed node (0).
#
# The defaults: 4 sims of 32 slots with 6,000 blocks of 64 characters (about 96,000 tokens: some
# 12 GB of a Llama 3 8B's KV cache), answers of 256 tokens, 10 requests/s for 120 s: about 13
# requests per node, under half its slots. A row lasts about 3 minutes (the last conversations end
# a minute after the arrivals stop).
#
#   bench/affinity.sh                          # about 26 minutes; after: mvn -B -DskipTests package
#   ROWS="affinity affinity@2 haproxy-hash" MOVES=0 DURATION=30 bench/affinity.sh   # a subset
#
# Needs haproxy (Debian: apt-get install haproxy) besides what bench/lib.sh checks.
set -uo pipefail
cd "$(dirname "$0")/.."
NAME=bench/affinity.sh
NODES=${NODES:-4}; SLOTS=${SLOTS:-32}; TOKENS=${TOKENS:-256}; TOKEN_DELAY=${TOKEN_DELAY:-20ms}
FIRST_TOKEN=${FIRST_TOKEN:-30ms}; PREFILL=${PREFILL:-2ms}; KV_BLOCKS=${KV_BLOCKS:-6000}; BLOCK=${BLOCK:-64}
RATE=${RATE:-10}; DURATION=${DURATION:-120}; TURNS=${TURNS:-6}; THINK=${THINK:-4s}; PROMPT_WORDS=${PROMPT_WORDS:-30}
SYSTEM_PROMPTS=${SYSTEM_PROMPTS:-8}; SYSTEM_WORDS=${SYSTEM_WORDS:-300}; SESSION_SHARE=${SESSION_SHARE:-0.5}
ROWS=${ROWS:-"round-robin least-loaded affinity nginx nginx-hash haproxy-hash"}
MOVES=${MOVES:-1}; MOVE_DURATION=${MOVE_DURATION:-120}
OUT=${OUT:-/tmp/heartgate-affinity-$(date -u +%Y%m%dT%H%M%SZ)}
# shellcheck source=bench/lib.sh
. bench/lib.sh
command -v haproxy >/dev/null || { echo "$NAME: haproxy is not installed (apt-get install haproxy)" >&2; exit 2; }
[ -f loadgen/target/loadgen.jar ] || { echo "$NAME: loadgen/target/loadgen.jar missing; run mvn -B -DskipTests package" >&2; exit 2; }
mkdir -p "$OUT"

# The embedded broker lives in a scheduler of its own that takes no traffic.
start_broker_host

servers() { local i; for i in $(seq 1 "$NODES"); do printf 'server 127.0.0.1:1940%s; ' "$i"; done; }
nginx_with "$(cat <<NGINX
  upstream rr { $(servers) keepalive 64; }
  upstream hash { hash \$http_x_session_id consistent; $(servers) keepalive 64; }
  server { listen 127.0.0.1:19390; location / { proxy_pass http://rr; proxy_http_version 1.1;
    proxy_set_header Connection ""; proxy_buffering off; proxy_read_timeout 120s; } }
  server { listen 127.0.0.1:19392; location / { proxy_pass http://hash; proxy_http_version 1.1;
    proxy_set_header Connection ""; proxy_buffering off; proxy_read_timeout 120s; } }
NGINX
)"
{
  printf 'global\n  maxconn 4096\n  pidfile %s/haproxy.pid\n' "$WORK"
  printf 'defaults\n  mode http\n  timeout connect 5s\n  timeout client 120s\n  timeout server 120s\n'
  printf 'frontend hash\n  bind 127.0.0.1:19391\n  default_backend hash\n'
  printf 'backend hash\n  balance hdr(X-Session-Id)\n  hash-type consistent\n  hash-balance-factor 125\n'
  for i in $(seq 1 "$NODES"); do printf '  server s%s 127.0.0.1:1940%s\n' "$i" "$i"; done
} > "$WORK/haproxy.cfg"
haproxy -D -f "$WORK/haproxy.cfg"
sleep 0.5
[ -f "$WORK/haproxy.pid" ] && PIDS+=("$(cat "$WORK/haproxy.pid")")

NODE_PIDS=()
start_node() { # start_node I: a sim on port 1940I and its agent (1 s heartbeats), as gpu-I
  local i=$1
  java -Xmx128m -XX:+UseSerialGC -jar inference-sim/target/inference-sim.jar --port "1940$i" --name "gpu-$i" \
    --models llama3:8b --tokens "$TOKENS" --token-delay "$TOKEN_DELAY" --first-token-delay "$FIRST_TOKEN" \
    --max-concurrency "$SLOTS" --max-queue 256 --kv-cache-blocks "$KV_BLOCKS" --kv-block-chars "$BLOCK" \
    --prefill-per-token "$PREFILL" > "$WORK/sim-$i.log" 2>&1 &
  SIM_PID[$i]=$!; PIDS+=($!)
  wait_for "$WORK/sim-$i.log" "listening"
  java -Xmx96m -XX:+UseSerialGC -jar heartbeat-agent/target/heartbeat-agent.jar --kafka "$KAFKA" \
    --node-id "gpu-$i" --url "http://127.0.0.1:1940$i" --backend vllm --interval 1s --capacity "$SLOTS" \
    --nvidia-smi /nonexistent > "$WORK/agent-$i.log" 2>&1 &
  AGENT_PID[$i]=$!; PIDS+=($!)
}
stop_node() { # stop_node I: the agent first (it leaves with its tombstone), then the sim
  local i=$1 p
  for p in "${AGENT_PID[$i]}" "${SIM_PID[$i]}"; do
    kill "$p" 2>/dev/null || true; while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
  done
  unset "AGENT_PID[$i]" "SIM_PID[$i]"
}
declare -A SIM_PID AGENT_PID

SCHED=""
start_scheduler() { # start_scheduler LOG ROUTABLE FLAGS...
  local log=$1 routable=$2; shift 2
  java -Xmx512m -jar scheduler/target/scheduler.jar --kafka "$KAFKA" --bind 127.0.0.1 --port 19080 \
    --admin-port 19081 "$@" > "$log" 2>&1 &
  SCHED=$!; PIDS+=($SCHED)
  wait_for "$log" "proxy listening"
  wait_routable "$routable"
}
stop_scheduler() {
  if [ -n "$SCHED" ]; then kill "$SCHED"; while kill -0 "$SCHED" 2>/dev/null; do sleep 0.1; done; fi
  SCHED=""
}

# Samples every sim's running + waiting requests once a second until its stop file appears.
sampler() { # sampler OUTFILE STOPFILE PORTS...
  python3 - "$@" <<'PY' &
import json, os, sys, time, urllib.request
out, stop, ports = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(out, "w") as f:
    while not os.path.exists(stop):
        row = {}
        for p in ports:
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{p}/metrics", timeout=1).read().decode()
            except Exception:
                continue
            n = 0.0
            for line in text.splitlines():
                if line.startswith(("vllm:num_requests_running", "vllm:num_requests_waiting")):
                    n += float(line.rsplit(" ", 1)[1])
            row[p] = n
        f.write(json.dumps({"t": time.time(), "load": row}) + "\n"); f.flush()
        time.sleep(1)
PY
  SAMPLER=$!
}

cache_totals() { # prints "queries hits" summed over the sims on PORTS
  local q=0 h=0 p text
  for p in "$@"; do
    text=$(curl -s "127.0.0.1:$p/metrics")
    q=$(python3 -c "import sys; print($q + sum(float(l.rsplit(' ',1)[1]) for l in sys.stdin if l.startswith('vllm:prefix_cache_queries_total')))" <<<"$text")
    h=$(python3 -c "import sys; print($h + sum(float(l.rsplit(' ',1)[1]) for l in sys.stdin if l.startswith('vllm:prefix_cache_hits_total')))" <<<"$text")
  done
  echo "$q $h"
}

loadgen() { # loadgen PORT LABEL OUTFILE
  java -Xmx512m -jar loadgen/target/loadgen.jar --url "http://127.0.0.1:$1" --api openai --rate "$RATE" \
    --duration "${DURATION}s" --timeout 60s --turns "$TURNS" --think-time "$THINK" --max-tokens "$TOKENS" \
    --prompt-words "$PROMPT_WORDS" --system-prompts "$SYSTEM_PROMPTS" --system-words "$SYSTEM_WORDS" \
    --session-header X-Session-Id --session-share "$SESSION_SHARE" --seed 11 --label "$2" --out "$3" > /dev/null
}

ports() { local i; for i in $(seq 1 "$NODES"); do printf '1940%s ' "$i"; done; }

row() { # one row: fresh sims, the proxy of the row, the load, then the figures
  local name=$1 port=19080 i
  for i in $(seq 1 "$NODES"); do start_node "$i"; done
  case $name in
    nginx) port=19390 ;;
    nginx-hash) port=19392 ;;
    haproxy-hash) port=19391 ;;
    affinity@*) start_scheduler "$WORK/scheduler-$name.log" "$NODES" --strategy affinity \
      --affinity-load-factor "${name#affinity@}" ;;
    *) start_scheduler "$WORK/scheduler-$name.log" "$NODES" --strategy "$name" ;;
  esac
  sleep 2 # every agent's first heartbeat carries its capacity
  rm -f "$WORK/stop"
  # shellcheck disable=SC2046
  sampler "$OUT/$name-load.jsonl" "$WORK/stop" $(ports)
  loadgen "$port" "$name" "$OUT/$name.json"
  touch "$WORK/stop"; wait "$SAMPLER"
  # shellcheck disable=SC2046
  read -r queries hits < <(cache_totals $(ports))
  local affinity=""
  case $name in affinity*) affinity=$(curl -s 127.0.0.1:19081/metrics | grep '^heartgate_affinity_total' | tr '\n' ';') ;; esac
  python3 - "$OUT" "$name" "$queries" "$hits" "$affinity" >> "$OUT/rows.jsonl" <<'PY'
import json, os, sys
out, name, queries, hits, affinity = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
r = json.load(open(os.path.join(out, f"{name}.json")))
ok = [s for s in r["requests"] if s.get("kind") == "ok" and s["ttftMs"] >= 0]
mean = round(sum(s["ttftMs"] for s in ok) / len(ok), 1) if ok else None
ratios, per_node = [], {}
for line in open(os.path.join(out, f"{name}-load.jsonl")):
    load = json.loads(line)["load"]
    values = list(load.values())
    if values and sum(values) > 0:
        m = sum(values) / len(values)
        ratios.append(max(values) / m)
        for node, v in load.items():
            per_node.setdefault(node, []).append(v)
node_means = [sum(v) / len(v) for v in per_node.values()]
spread = max(node_means) / (sum(node_means) / len(node_means)) if node_means and sum(node_means) > 0 else None
res = {}
for part in filter(None, affinity.split(";")):
    label, value = part.rsplit(" ", 1)
    res[label.split('result="')[1].split('"')[0]] = int(float(value))
print(json.dumps({"row": name, "sent": r["counts"]["sent"], "ok": r["counts"]["ok"], "errors": r["counts"]["failedByKind"],
                  "ttftMean": mean, "ttftP50": r["ttftMs"]["p50"], "ttftP99": r["ttftMs"]["p99"],
                  "cacheHitRate": round(hits / queries, 3) if queries else None,
                  "spreadPerSecond": round(sum(ratios) / len(ratios), 2) if ratios else None,
                  "spreadOverRun": round(spread, 2) if spread else None, "affinity": res}))
PY
  stop_scheduler
  for i in $(seq 1 "$NODES"); do stop_node "$i"; done
  tail -1 "$OUT/rows.jsonl" >&2
}

moves() { # the membership run: a node joins at DURATION/3, the first leaves at 2 x DURATION/3
  local i start join leave
  for i in $(seq 1 "$NODES"); do start_node "$i"; done
  start_scheduler "$WORK/scheduler-moves.log" "$NODES" --strategy affinity
  sleep 2
  start=$(date +%s.%N)
  DURATION=$MOVE_DURATION loadgen 19080 moves "$OUT/moves.json" &
  local gen=$!
  sleep "$(python3 -c "print($MOVE_DURATION / 3)")"
  join=$(date +%s.%N); start_node $((NODES + 1)); wait_routable $((NODES + 1))
  sleep "$(python3 -c "print(max(0.0, $MOVE_DURATION / 3 - ($(date +%s.%N) - $join)))")"
  leave=$(date +%s.%N); stop_node 1
  wait "$gen"
  python3 - "$OUT/moves.json" "$start" "$join" "$leave" "$NODES" > "$OUT/moves-summary.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
start, join, leave, n = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
join_ms, leave_ms = (join - start) * 1000, (leave - start) * 1000
turns = {}
for s in r["requests"]:
    if s.get("kind") == "ok" and s.get("node") and s.get("affinity") == "hit":
        turns.setdefault(s["conversation"], []).append((s["scheduledMs"], s["node"]))
def moved(at, until):  # conversations whose own node (hit turns) before a change differs after it
    n = m = 0
    for ts in turns.values():
        before = [node for t, node in ts if t < at - 1000]
        after = [node for t, node in ts if at + 2000 < t < until]
        if before and after:
            n += 1
            m += before[-1] != after[0]
    return (round(m / n, 3) if n else None), n
def steady(lo, hi):  # the same between consecutive hits with no change in between: should be 0
    n = m = 0
    for ts in turns.values():
        inside = [node for t, node in ts if lo < t < hi]
        for a, b in zip(inside, inside[1:]):
            n += 1
            m += a != b
    return (round(m / n, 3) if n else None), n
j, jn = moved(join_ms, leave_ms - 1000)
l, ln = moved(leave_ms, float("inf"))
b, bn = steady(0, join_ms - 1000)
print(json.dumps({"nodesBefore": n, "joinMovedShare": j, "joinKeys": jn, "leaveMovedShare": l, "leaveKeys": ln,
                  "steadyMovedShare": b, "steadyPairs": bn, "dueOnJoin": round(1 / (n + 1), 3),
                  "dueOnLeave": round(1 / (n + 1), 3)}))
PY
  stop_scheduler
  for i in "${!SIM_PID[@]}"; do stop_node "$i"; done
  cat "$OUT/moves-summary.json" >&2
}

: > "$OUT/rows.jsonl"
for name in $ROWS; do row "$name"; done
[ "$MOVES" = 1 ] && moves

echo
echo "## Affinity benchmark $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
python3 - "$OUT" "$NODES" "$SLOTS" "$RATE" "$DURATION" "$TURNS" "$PREFILL" "$KV_BLOCKS" "$BLOCK" <<'PY'
import json, os, sys
out, nodes, slots, rate, duration, turns, prefill, blocks, block = sys.argv[1:10]
rows = [json.loads(l) for l in open(os.path.join(out, "rows.jsonl")) if l.strip()]
print(f"\n{nodes} sims x {slots} slots, KV cache {blocks} blocks of {block} chars, prefill {prefill}/token; "
      f"{turns}-turn conversations at {rate} requests/s for {duration} s; TTFT in ms.\n")
print("| row | completed | TTFT mean | TTFT p50 | TTFT p99 | cache hit rate | load max/mean over the run | per second | affinity | errors |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    aff = ", ".join(f"{k} {v}" for k, v in r["affinity"].items()) or "-"
    errs = ", ".join(f"{k} {v}" for k, v in r["errors"].items()) or "-"
    print(f"| {r['row']} | {r['ok']} | {r['ttftMean']} | {r['ttftP50']} | {r['ttftP99']} | {r['cacheHitRate']} |"
          f" {r['spreadOverRun']} | {r['spreadPerSecond']} | {aff} | {errs} |")
p = os.path.join(out, "moves-summary.json")
if os.path.exists(p):
    m = json.load(open(p))
    print(f"\nMembership (affinity): of {m['joinKeys']} conversations with hits before and after node "
          f"{int(m['nodesBefore']) + 1} joined, {m['joinMovedShare']} changed node (due {m['dueOnJoin']}); of "
          f"{m['leaveKeys']} across a node leaving, {m['leaveMovedShare']} (due {m['dueOnLeave']}); between "
          f"consecutive hits with no change, {m['steadyMovedShare']} of {m['steadyPairs']}.")
PY
echo
echo "Results: $OUT (one loadgen JSON and load samples per row, rows.jsonl, moves-summary.json)"

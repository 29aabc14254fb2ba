#!/usr/bin/env bash
# Cache-affinity benchmark on simulated vLLM nodes with a prefix cache and a prefill cost.
#
# NODES sims of SLOTS slots each (agents report the capacity), each with a KV cache of KV_BLOCKS
# blocks of BLOCK characters and a prefill of PREFILL per uncached token (4 characters), added to
# FIRST_TOKEN before the first token; answers of TOKENS tokens at TOKEN_DELAY. Conversations of
# TURNS turns whose history grows (each turn resends it) open with one of SYSTEM_PROMPTS shared
# system prompts of SYSTEM_WORDS words (or SYSTEM_TOKENS tokens exactly), user messages of
# PROMPT_WORDS words (or PROMPT_TOKENS tokens), THINK between an answer and the next turn, RATE
# requests/s (Poisson) for DURATION s. A share SESSION_SHARE of the conversations send X-Session-Id,
# the rest nothing; the scheduler then keys them by a hash of the prompt's first 2,048 characters.
#
# WORKLOAD picks the load, or a list run in order (default: all four); each sets its own defaults
# for the knobs above, and a knob set by the caller wins over every workload's default:
#   conversations  6-turn conversations at 10 requests/s for 120 s over 8 system prompts of 300
#                  words, half sending X-Session-Id: below the fleet's capacity. Then the membership
#                  run (MOVES=1). Figures: mean TTFT and its ratio to round robin's.
#   quiet          the same conversations at RATE=1: nearly idle. Figures: of the keyed turns, the
#                  share placed on their key's node (X-Heartgate-Affinity: hit), for the scheduler's
#                  affinity rows; the sims' prefix-cache hit rate for every row. Keyed turns are all
#                  turns: the system prompt and first message come to about 2,000 characters, within
#                  the 2,048 the prefix key hashes, so a turn without X-Session-Id is keyed by its
#                  conversation's opening; the share over the turns that sent X-Session-Id is beside it.
#   hot            one shared system prompt of SYSTEM_TOKENS=2000 tokens (8,000 characters: the prefix
#                  key is that prompt's, one key for every request), no session header, single-turn
#                  requests for 60 s at twice one node's capacity, where one node's capacity is
#                  SLOTS / (FIRST_TOKEN + TOKENS x TOKEN_DELAY) requests/s (the shared prompt cached,
#                  the message's prefill of about 0.1 s left out): 32 / (0.03 + 256 x 0.02) = 6.2, so
#                  RATE=12.4, half the fleet's. Figures: mean and p99 TTFT, with the ratios of p99 to
#                  least-loaded's and of the mean to round robin's.
#   prefill        prefill-heavy: single-turn prompts of about 4,000 tokens, one of 16 shared system
#                  prompts of SYSTEM_TOKENS=3600 and a user message of PROMPT_TOKENS=400, answers of
#                  TOKENS=100 at TOKEN_DELAY=2ms, SLOTS=4, no session header (the prefix key: one key
#                  per system prompt). Prefill costs PREFILL=250us an uncached token (4,000 tokens/s
#                  per request): a prompt whose system prompt the node holds has its first token after
#                  0.13 s, one it does not after 1.03 s, against 0.2 s of answer, so a slot serves a
#                  cached prompt in 0.33 s and a cold one in 1.23 s. Each node's cache holds
#                  KV_BLOCKS=1300 blocks of 64 characters, about five of the 16 system prompts: a
#                  router that keeps each prompt on one node finds it cached; one that spreads every
#                  prompt over every node evicts them. Fresh, cold sims per row, then each rate of
#                  RATES="4 8 ... 48" for DURATION=30 s on those sims, new user messages each time,
#                  stopping after the first rate whose p99 TTFT (failed requests counting as
#                  endless) reaches KNEE_MS=2000. The knee: the highest rate before that one.
#                  Figures: each row's knee and its ratio to round robin's. A row takes at most
#                  about 7 minutes.
#
# Rows (fresh sims, cold caches, for each): sticky (the scheduler's --strategy affinity), bounded
# (--strategy affinity --affinity-bound requests; bounded@C with --affinity-load-factor C),
# least-loaded and round-robin (capacity and the gateway queue), nginx-hash (nginx `hash
# $http_x_session_id consistent`) and haproxy-hash (HAProxy `balance hdr(X-Session-Id)` with
# `hash-type consistent` and `hash-balance-factor 125`); also affinity (= sticky), affinity@C
# (--strategy affinity --affinity-load-factor C) and nginx (nginx round robin). Without the header
# both hash rows fall back to round robin (nginx since 1.13, HAProxy as documented). A row whose
# scheduler does not start (a flag this build lacks) is recorded as not run and the rest go on.
# Per row: mean/p50/p99 time to first token, the sims' prefix-cache hit rate (tokens), and the spread
# of load: requests running or waiting per node sampled each second, reported as max/mean over
# the nodes of each node's mean over the run (how evenly the work was shared), and as the mean over
# seconds of that second's max/mean (which, with a few requests per node, counting noise dominates).
#
# The membership run (conversations, sticky, MOVE_DURATION s): the same load; at a third of it a
# fifth node joins, at two thirds the first leaves. A conversation's own node is where its turns
# answered X-Heartgate-Affinity: hit went; for every conversation with hits before a change and after
# it, it counts whether its own node changed (spilled turns do not count). The check: between
# consecutive hits with no change in between, the share that changed node (0).
#
# The defaults: 4 sims of 32 slots with 6,000 blocks of 64 characters (about 96,000 tokens: some
# 12 GB of a Llama 3 8B's KV cache), answers of 256 tokens at 20 ms, 2 ms of prefill a token.
# Run times with the six default rows (about 30 s a row to start and stop the processes):
# conversations about 25 minutes (a row about 3.5: the last conversations end a minute after the
# arrivals stop; then the membership run), quiet about 21, hot about 10, prefill at most 35 (about
# 5 a row; less for a row that stops early): about 1 h 30 min in all.
#
#   bench/affinity.sh                          # all four workloads; after: mvn -B -DskipTests package
#   WORKLOAD=prefill bench/affinity.sh         # one workload (conversations, quiet, hot or prefill)
#   WORKLOAD="quiet hot" ROWS="sticky bounded round-robin" bench/affinity.sh           # a subset
#   DURATION=20 RATES="4 8 12" MOVES=0 bench/affinity.sh      # quick, every workload: about 40 minutes
#   WORKLOAD=hot DURATION=20 ROWS="sticky least-loaded round-robin" bench/affinity.sh  # about 3 minutes
#
# Output: OUT/WORKLOAD/rows.jsonl (a JSON line per row), the loadgen JSON and load samples per row
# (per rate for prefill) and summary.md per workload; OUT/summary.md all of them.
# Needs haproxy (Debian: apt-get install haproxy) besides what bench/lib.sh checks.
set -uo pipefail
cd "$(dirname "$0")/.."
NAME=bench/affinity.sh
KNOBS="SLOTS TOKENS TOKEN_DELAY FIRST_TOKEN PREFILL KV_BLOCKS BLOCK RATE RATES DURATION TURNS THINK PROMPT_WORDS
  PROMPT_TOKENS SYSTEM_PROMPTS SYSTEM_WORDS SYSTEM_TOKENS SESSION_SHARE MOVES KNEE_MS"
declare -A GIVEN
for k in $KNOBS; do [ -n "${!k+x}" ] && GIVEN[$k]=${!k}; done
knob() { # knob NAME DEFAULT: NAME as the caller set it, else DEFAULT
  if [ -n "${GIVEN[$1]+x}" ]; then printf -v "$1" '%s' "${GIVEN[$1]}"; else printf -v "$1" '%s' "$2"; fi
}
NODES=${NODES:-4}; MOVE_DURATION=${MOVE_DURATION:-120}
WORKLOAD=${WORKLOAD:-"conversations quiet hot prefill"}
ROWS=${ROWS:-"sticky bounded least-loaded round-robin nginx-hash haproxy-hash"}
OUT=${OUT:-/tmp/heartgate-affinity-$(date -u +%Y%m%dT%H%M%SZ)}
for W in $WORKLOAD; do
  case $W in conversations|quiet|hot|prefill) ;; *) echo "$NAME: unknown workload '$W'" >&2; exit 2 ;; esac
done
# shellcheck source=bench/lib.sh
. bench/lib.sh
command -v haproxy >/dev/null || { echo "$NAME: haproxy is not installed (apt-get install haproxy)" >&2; exit 2; }
[ -f loadgen/target/loadgen.jar ] || { echo "$NAME: loadgen/target/loadgen.jar missing; run mvn -B -DskipTests package" >&2; exit 2; }
mkdir -p "$OUT"

ms() { # ms DURATION: 20ms, 2s or 1m in milliseconds
  case $1 in *ms) echo "${1%ms}" ;; *s) echo $((${1%s} * 1000)) ;; *m) echo $((${1%m} * 60000)) ;; esac
}

workload() { # workload W: every knob to W's default unless the caller set it
  knob SLOTS 32; knob TOKENS 256; knob TOKEN_DELAY 20ms; knob FIRST_TOKEN 30ms; knob PREFILL 2ms
  knob KV_BLOCKS 6000; knob BLOCK 64; knob RATE 10; knob RATES ""; knob DURATION 120; knob TURNS 6; knob THINK 4s
  knob PROMPT_WORDS 30; knob PROMPT_TOKENS 0; knob SYSTEM_PROMPTS 8; knob SYSTEM_WORDS 300; knob SYSTEM_TOKENS 0
  knob SESSION_SHARE 0.5; knob MOVES 0; knob KNEE_MS 2000
  case $1 in
    conversations) knob MOVES 1 ;;
    quiet) knob RATE 1 ;;
    hot)
      knob TURNS 1; knob SYSTEM_PROMPTS 1; knob SYSTEM_TOKENS 2000; knob SESSION_SHARE 0; knob DURATION 60
      knob RATE "$(python3 -c "print(round(2 * $SLOTS * 1000 / ($(ms "$FIRST_TOKEN") + $TOKENS * $(ms "$TOKEN_DELAY")), 1))")" ;;
    prefill)
      knob SLOTS 4; knob TOKENS 100; knob TOKEN_DELAY 2ms; knob PREFILL 250us; knob KV_BLOCKS 1300
      knob TURNS 1; knob SYSTEM_PROMPTS 16; knob SYSTEM_TOKENS 3600; knob PROMPT_TOKENS 400
      knob SESSION_SHARE 0; knob DURATION 30; knob RATES "4 8 12 16 20 24 28 32 36 40 44 48" ;;
  esac
}

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
start_scheduler() { # start_scheduler LOG ROUTABLE FLAGS...: fails, saying why, when it exits or stays silent 60 s
  local log=$1 routable=$2 n=0; shift 2
  $OWN_SESSION java -Xmx512m -jar scheduler/target/scheduler.jar --kafka "$KAFKA" --bind 127.0.0.1 --port 19080 \
    --admin-port 19081 --events-topic "bench-events-$(date +%s%N)" "$@" > "$log" 2>&1 & # rows share nothing
  SCHED=$!; PIDS+=($SCHED)
  until grep -q "proxy listening" "$log" 2>/dev/null; do
    if ! kill -0 "$SCHED" 2>/dev/null || [ $((n += 1)) -gt 600 ]; then
      echo "$NAME: the scheduler with $* did not start:" >&2; tail -3 "$log" >&2
      stop_scheduler; return 1
    fi
    sleep 0.1
  done
  wait_routable "$routable"
}
stop_scheduler() {
  if [ -n "$SCHED" ]; then kill "$SCHED" 2>/dev/null; while kill -0 "$SCHED" 2>/dev/null; do sleep 0.1; done; fi
  SCHED=""
}

proxy() { # proxy ROW: starts the row's scheduler, if it has one, and sets PORT to where its load goes
  local log="$WORK/scheduler-$W-$1.log"
  PORT=19080
  case $1 in
    nginx) PORT=19390 ;;
    nginx-hash) PORT=19392 ;;
    haproxy-hash) PORT=19391 ;;
    sticky|affinity) start_scheduler "$log" "$NODES" --strategy affinity ;;
    bounded) start_scheduler "$log" "$NODES" --strategy affinity --affinity-bound requests ;;
    bounded@*) start_scheduler "$log" "$NODES" --strategy affinity --affinity-bound requests \
      --affinity-load-factor "${1#bounded@}" ;;
    affinity@*) start_scheduler "$log" "$NODES" --strategy affinity --affinity-load-factor "${1#affinity@}" ;;
    *) start_scheduler "$log" "$NODES" --strategy "$1" ;;
  esac
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

loadgen() { # loadgen PORT LABEL OUTFILE [FLAGS...]: the workload's load; SEED (11) draws arrivals and messages
  local port=$1 label=$2 out=$3 sized=(); shift 3
  [ "$PROMPT_TOKENS" -gt 0 ] && sized+=(--prompt-tokens "$PROMPT_TOKENS")
  [ "$SYSTEM_TOKENS" -gt 0 ] && sized+=(--system-tokens "$SYSTEM_TOKENS")
  java -Xmx512m -jar loadgen/target/loadgen.jar --url "http://127.0.0.1:$port" --api openai --rate "$RATE" \
    --duration "${DURATION}s" --timeout 60s --turns "$TURNS" --think-time "$THINK" --max-tokens "$TOKENS" \
    --prompt-words "$PROMPT_WORDS" --system-prompts "$SYSTEM_PROMPTS" --system-words "$SYSTEM_WORDS" \
    --session-header X-Session-Id --session-share "$SESSION_SHARE" --seed "${SEED:-11}" --system-seed 11 \
    "${sized[@]}" "$@" --label "$label" --out "$out" > /dev/null
}

ports() { local i; for i in $(seq 1 "$NODES"); do printf '1940%s ' "$i"; done; }

ladder() { # ladder NAME: each rate of RATES in turn, new user messages each, up to the first past the knee
  local name=$1 rate k=0
  for rate in $RATES; do
    k=$((k + 1))
    RATE=$rate SEED=$((11 + k)) loadgen "$PORT" "$name@$rate" "$DIR/$name@$rate.json"
    python3 - "$DIR/$name@$rate.json" "$KNEE_MS" <<'PY' || break
import json, math, sys
r = json.load(open(sys.argv[1]))
sent = [s for s in r["requests"] if s["kind"] != "dropped"]
t = sorted(s["ttftMs"] if s["kind"] == "ok" and s["ttftMs"] >= 0 else math.inf for s in sent)
p99 = t[max(0, math.ceil(0.99 * len(t)) - 1)] if t else math.inf
print(f"{r['label']}: p99 TTFT {p99} ms", file=sys.stderr)
sys.exit(0 if p99 < float(sys.argv[2]) else 1)
PY
  done
}

row() { # one row: fresh sims, the proxy of the row, the load, then the figures
  local name=$1 i queries0 hits0 queries hits
  for i in $(seq 1 "$NODES"); do start_node "$i"; done
  if ! proxy "$name"; then
    printf '{"row": "%s", "notRun": "its scheduler did not start (scheduler-%s-%s.log)"}\n' "$name" "$W" "$name" \
      >> "$DIR/rows.jsonl"
    for i in $(seq 1 "$NODES"); do stop_node "$i"; done
    return
  fi
  sleep 2 # every agent's first heartbeat carries its capacity
  # shellcheck disable=SC2046
  read -r queries0 hits0 < <(cache_totals $(ports))
  rm -f "$WORK/stop"
  # shellcheck disable=SC2046
  sampler "$DIR/$name-load.jsonl" "$WORK/stop" $(ports)
  if [ "$W" = prefill ]; then ladder "$name"; else loadgen "$PORT" "$name" "$DIR/$name.json"; fi
  touch "$WORK/stop"; wait "$SAMPLER"
  # shellcheck disable=SC2046
  read -r queries hits < <(cache_totals $(ports))
  local affinity=""
  case $name in sticky|bounded*|affinity*) affinity=$(curl -s 127.0.0.1:19081/metrics | grep '^heartgate_affinity_total' | tr '\n' ';') ;; esac
  python3 - "$DIR" "$name" "$(python3 -c "print($queries - $queries0)")" "$(python3 -c "print($hits - $hits0)")" \
    "$affinity" "$([ "$W" = prefill ] && echo "$RATES")" "$KNEE_MS" >> "$DIR/rows.jsonl" <<'PY'
import json, math, os, sys
out, name, queries, hits, affinity = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rates, knee_ms = sys.argv[6].split(), float(sys.argv[7])
def figures(r):
    sent = [s for s in r["requests"] if s["kind"] != "dropped"]
    ok = [s for s in sent if s["kind"] == "ok" and s["ttftMs"] >= 0]
    t = sorted(s["ttftMs"] if s["kind"] == "ok" and s["ttftMs"] >= 0 else math.inf for s in sent)
    p99 = t[max(0, math.ceil(0.99 * len(t)) - 1)] if t else None
    keyed = [s for s in sent if s.get("affinity") in ("hit", "spill")]
    session = [s for s in keyed if s.get("session")]
    errors = {}
    for s in sent:
        if s["kind"] != "ok":
            errors[s["kind"]] = errors.get(s["kind"], 0) + 1
    return {"sent": len(sent), "ok": r["counts"]["ok"], "errors": errors,
            "ttftMean": round(sum(s["ttftMs"] for s in ok) / len(ok), 1) if ok else None,
            "ttftP50": r["ttftMs"]["p50"], "ttftP99": r["ttftMs"]["p99"],
            "ttftP99WithFailures": None if p99 is None or p99 == math.inf else p99,
            "keyedTurns": len(keyed), "keyedHits": sum(s["affinity"] == "hit" for s in keyed),
            "sessionTurns": len(session), "sessionHits": sum(s["affinity"] == "hit" for s in session)}
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
row = {"row": name}
if rates:
    ladder = []
    for rate in rates:
        p = os.path.join(out, f"{name}@{rate}.json")
        if os.path.exists(p):
            ladder.append({"rate": float(rate), **figures(json.load(open(p)))})
    knee = 0.0
    for step in ladder:
        if step["ttftP99WithFailures"] is None or step["ttftP99WithFailures"] >= knee_ms:
            break
        knee = step["rate"]
    row.update({"knee": knee, "rates": ladder})
else:
    row.update(figures(json.load(open(os.path.join(out, f"{name}.json")))))
row.update({"cacheHitRate": round(hits / queries, 3) if queries else None,
            "spreadPerSecond": round(sum(ratios) / len(ratios), 2) if ratios else None,
            "spreadOverRun": round(spread, 2) if spread else None, "affinity": res})
print(json.dumps(row))
PY
  stop_scheduler
  for i in $(seq 1 "$NODES"); do stop_node "$i"; done
  tail -1 "$DIR/rows.jsonl" >&2
}

moves() { # the membership run: a node joins at DURATION/3, the first leaves at 2 x DURATION/3
  local i start join leave
  for i in $(seq 1 "$NODES"); do start_node "$i"; done
  if ! start_scheduler "$WORK/scheduler-moves.log" "$NODES" --strategy affinity; then
    for i in $(seq 1 "$NODES"); do stop_node "$i"; done
    return
  fi
  sleep 2
  start=$(date +%s.%N)
  DURATION=$MOVE_DURATION loadgen 19080 moves "$DIR/moves.json" &
  local gen=$!
  sleep "$(python3 -c "print($MOVE_DURATION / 3)")"
  join=$(date +%s.%N); start_node $((NODES + 1)); wait_routable $((NODES + 1))
  sleep "$(python3 -c "print(max(0.0, $MOVE_DURATION / 3 - ($(date +%s.%N) - $join)))")"
  leave=$(date +%s.%N); stop_node 1
  wait "$gen"
  python3 - "$DIR/moves.json" "$start" "$join" "$leave" "$NODES" > "$DIR/moves-summary.json" <<'PY'
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
  cat "$DIR/moves-summary.json" >&2
}

summary() { # the workload's table, from DIR/rows.jsonl
  echo "### $W"
  python3 - "$DIR" "$W" "$NODES" "$SLOTS" "$RATE" "$DURATION" "$TURNS" "$PREFILL" "$KV_BLOCKS" "$BLOCK" "$TOKENS" \
    "$SYSTEM_PROMPTS" "$RATES" "$KNEE_MS" "$FIRST_TOKEN" "$TOKEN_DELAY" <<'PY'
import json, os, sys
out, w, nodes, slots, rate, duration, turns, prefill, blocks, block, tokens, systems, rates, knee_ms, first, delay = \
    sys.argv[1:17]
rows = [json.loads(l) for l in open(os.path.join(out, "rows.jsonl")) if l.strip()]
ran = {r["row"]: r for r in rows if "notRun" not in r}
def n(v, digits=0):
    return "-" if v is None else f"{v:,.{digits}f}"
def ratio(a, b):
    return "-" if a is None or not b else f"{a / b:.2f}"
def share(hits, total):
    return "-" if not total else f"{hits / total:.3f} ({hits} of {total})"
def errs(r):
    return ", ".join(f"{k} {v}" for k, v in r.get("errors", {}).items()) or "-"
def aff(r):
    return ", ".join(f"{k} {v}" for k, v in r["affinity"].items()) or "-"
rr, ll = ran.get("round-robin", {}), ran.get("least-loaded", {})
load = (f"rates {rates} requests/s, {duration} s each" if w == "prefill"
        else f"single requests at {rate} requests/s for {duration} s" if turns == "1"
        else f"{turns}-turn conversations at {rate} requests/s for {duration} s")
print(f"\n{nodes} sims x {slots} slots, KV cache {blocks} blocks of {block} chars, prefill {prefill}/token, "
      f"{tokens}-token answers; {load}; TTFT in ms.\n")
if w == "conversations":
    print("| row | completed | TTFT mean | mean / round robin's | TTFT p50 | TTFT p99 | cache hit rate "
          "| load max/mean over the run | per second | affinity | errors |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
elif w == "quiet":
    print("| row | completed | keyed turns on their key's node | of those sending X-Session-Id | cache hit rate "
          "| TTFT mean | TTFT p99 | affinity | errors |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
elif w == "hot":
    print("| row | completed | TTFT mean | mean / round robin's | TTFT p99 | p99 / least-loaded's | cache hit rate "
          "| load max/mean over the run | affinity | errors |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
else:
    print(f"| row | knee (requests/s) | knee / round robin's | p99 TTFT by rate (failures endless) | cache hit rate "
          "| load max/mean over the run | affinity |")
    print("| --- | ---: | ---: | --- | ---: | ---: | --- |")
for r in rows:
    if "notRun" in r:
        print(f"| {r['row']} | not run: {r['notRun']} |")
    elif w == "conversations":
        print(f"| {r['row']} | {r['ok']} | {n(r['ttftMean'])} | {ratio(r['ttftMean'], rr.get('ttftMean'))} "
              f"| {n(r['ttftP50'])} | {n(r['ttftP99'])} | {r['cacheHitRate']} | {r['spreadOverRun']} "
              f"| {r['spreadPerSecond']} | {aff(r)} | {errs(r)} |")
    elif w == "quiet":
        print(f"| {r['row']} | {r['ok']} | {share(r['keyedHits'], r['keyedTurns'])} "
              f"| {share(r['sessionHits'], r['sessionTurns'])} | {r['cacheHitRate']} | {n(r['ttftMean'])} "
              f"| {n(r['ttftP99'])} | {aff(r)} | {errs(r)} |")
    elif w == "hot":
        print(f"| {r['row']} | {r['ok']} | {n(r['ttftMean'])} | {ratio(r['ttftMean'], rr.get('ttftMean'))} "
              f"| {n(r['ttftP99'])} | {ratio(r['ttftP99'], ll.get('ttftP99'))} | {r['cacheHitRate']} "
              f"| {r['spreadOverRun']} | {aff(r)} | {errs(r)} |")
    else:
        steps = ", ".join(f"{s['rate']:g}: {n(s['ttftP99WithFailures'])}" for s in r["rates"])
        knee = f"{r['knee']:g}" if r["knee"] else f"below {rates.split()[0]}"
        print(f"| {r['row']} | {knee} | {ratio(r['knee'], rr.get('knee'))} | {steps} | {r['cacheHitRate']} "
              f"| {r['spreadOverRun']} | {aff(r)} |")
if w == "hot":
    print(f"\nThe rate: twice one node's capacity, 2 x {slots} slots / ({first} + {tokens} x {delay}) = {rate} "
          "requests/s.")
if w == "prefill":
    print(f"\nThe knee: the highest rate before the first whose p99 TTFT reached {knee_ms} ms; every row on fresh "
          f"sims, each cache holding about five of the {systems} shared prompts.")
p = os.path.join(out, "moves-summary.json")
if os.path.exists(p):
    m = json.load(open(p))
    print(f"\nMembership (sticky): of {m['joinKeys']} conversations with hits before and after node "
          f"{int(m['nodesBefore']) + 1} joined, {m['joinMovedShare']} changed node (due {m['dueOnJoin']}); of "
          f"{m['leaveKeys']} across a node leaving, {m['leaveMovedShare']} (due {m['dueOnLeave']}); between "
          f"consecutive hits with no change, {m['steadyMovedShare']} of {m['steadyPairs']}.")
PY
}

for W in $WORKLOAD; do
  workload "$W"
  DIR=$OUT/$W; mkdir -p "$DIR"; : > "$DIR/rows.jsonl"
  echo "$NAME: $W: rows $ROWS" >&2
  for name in $ROWS; do row "$name"; done
  [ "$MOVES" = 1 ] && moves
  summary > "$DIR/summary.md"
done

{
  echo "## Affinity benchmark $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(git rev-parse --short HEAD)"
  for W in $WORKLOAD; do echo; cat "$OUT/$W/summary.md"; done
} > "$OUT/summary.md"
echo
cat "$OUT/summary.md"
echo
echo "Results: $OUT (per workload: rows.jsonl, summary.md, one loadgen JSON and load samples per row)"

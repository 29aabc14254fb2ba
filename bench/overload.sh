#!/usr/bin/env bash
# Overload benchmark, in two parts, on simulated vLLM nodes of 4 slots each (OpenAI SSE streams).
#
# Answers ask for MIN_TOKENS to TOKENS tokens (evenly drawn per request, as real answer lengths vary).
#
# Part 1, two callers at 2x the fleet's capacity: three equal sims (tokens of TOKEN_DELAY after
# FIRST_TOKEN, so each slot serves about one request a second), each with its own queue of
# NODE_QUEUE beyond its slots (then 503 busy, as Ollama does; vLLM's grows unless capped). A heavy caller at
# HEAVY_RATE and a light one at LIGHT_RATE (10x less), open-loop Poisson arrivals. Both callers
# send for WARMUP + DURATION seconds, and every figure counts only the requests that arrive from
# WARMUP seconds on (goodput: the requests completed in that window, over DURATION; the nodes' own
# 503s: the whole run; tokens sent and slots busy: the sims' own counts). The first
# seconds are the load generators' own JVMs warming up on a busy machine, and the flood's start,
# when all 12 slots begin together and none frees for a while. Every row, the idle one included, is
# cut the same way. The sims' readings span the window less half a second at either end. HEAVY_SEED
# and LIGHT_SEED fix each caller's arrivals and answer lengths (3 and 5). SCHED_JAVA_OPTS: JVM
# options for the scheduler under test.
# Rows: the light caller alone on an idle fleet (the scheduler with capacity: its reference p99),
# nginx round robin (the nodes' own queues), HAProxy round robin with maxconn 4 per server and its
# queue (timeout queue QUEUE_TIMEOUT), the scheduler without capacity (today), and the scheduler with
# capacity and its gateway queue (--queue-timeout QUEUE_TIMEOUT); on request (not by default), the
# scheduler+reserve row adds --reserve-slots RESERVE_SLOTS. Per caller: goodput, p50/p99 time
# to first token of the requests that completed, error answers by status; and how many requests the
# nodes themselves refused busy.
#
# Part 2, a heterogeneous fleet: three sims of 15, 30 and 60 ms per token, 4 slots each, under
# CLIENTS streaming clients in a closed loop (1.5x the 12 slots): loadgen with --max-in-flight
# CLIENTS and arrivals far above the service rate, so a client that finishes starts again within a
# few ms. Rows: nginx round robin, nginx least_conn, HAProxy leastconn with maxconn 4 and its queue,
# and every scheduler strategy with capacity and the queue. p50/p99 time to first token and mean
# completion time.
#
#   bench/overload.sh                      # about 25 minutes; after: mvn -B -DskipTests package
#   PARTS=2 ROWS2="nginx-least-conn least-loaded" DURATION=30 bench/overload.sh   # a subset
#   PARTS=1 ROWS1=scheduler+capacity LIGHT_PRIORITY=1 bench/overload.sh  # the light caller in a higher class
#   PARTS=1 ROWS1="idle scheduler+reserve" RESERVE_SLOTS=4 bench/overload.sh  # --reserve-slots 4 (default 5)
#   PARTS=1 TOKEN_DELAY=10ms HEAVY_RATE=44 LIGHT_RATE=4.4 bench/overload.sh   # faster tokens, still 2x capacity
#   SIM_CPUS=1 taskset -c 0 bench/overload.sh    # the sims on CPU 1, everything else on CPU 0, as GPU nodes
#                                                 # do not share the gateway's CPUs
#
# Needs haproxy (Debian: apt-get install haproxy) besides what bench/lib.sh checks.
set -uo pipefail
cd "$(dirname "$0")/.."
NAME=bench/overload.sh
DURATION=${DURATION:-60}; HEAVY_RATE=${HEAVY_RATE:-20}; LIGHT_RATE=${LIGHT_RATE:-2}
TOKENS=${TOKENS:-72}; MIN_TOKENS=${MIN_TOKENS:-8}; TOKEN_DELAY=${TOKEN_DELAY:-25ms}; FIRST_TOKEN=${FIRST_TOKEN:-100ms}; NODE_QUEUE=${NODE_QUEUE:-8}
WARMUP=${WARMUP:-5}; HEAVY_SEED=${HEAVY_SEED:-3}; LIGHT_SEED=${LIGHT_SEED:-5}
case $DURATION in ''|*[!0-9]*|0|1) echo "$NAME: DURATION must be whole seconds, 2 or more, was '$DURATION'" >&2; exit 2 ;; esac
for seed in "$HEAVY_SEED" "$LIGHT_SEED"; do
  case $seed in ''|*[!0-9]*) echo "$NAME: HEAVY_SEED and LIGHT_SEED must be whole numbers, got '$seed'" >&2; exit 2 ;; esac
done
case $WARMUP in ''|*[!0-9]*) echo "$NAME: WARMUP must be whole seconds (0 or more), was '$WARMUP'" >&2; exit 2 ;; esac
if [ -n "${SIM_CPUS:-}" ] && ! taskset -c "$SIM_CPUS" true 2>/dev/null; then
  echo "$NAME: SIM_CPUS='$SIM_CPUS' is not a CPU list taskset can pin to on this machine (see nproc)" >&2; exit 2
fi
QUEUE_TIMEOUT=${QUEUE_TIMEOUT:-30}; CLIENTS=${CLIENTS:-18}; STRATEGY1=${STRATEGY1:-least-loaded}
RESERVE_SLOTS=${RESERVE_SLOTS:-5}
case $RESERVE_SLOTS in ''|*[!0-9]*) echo "$NAME: RESERVE_SLOTS must be a whole number, was '$RESERVE_SLOTS'" >&2; exit 2 ;; esac
PARTS=${PARTS:-"1 2"}
ROWS1=${ROWS1:-"idle nginx haproxy scheduler scheduler+capacity"}
ROWS2=${ROWS2:-"nginx nginx-least-conn haproxy-leastconn random round-robin weighted least-connections least-loaded"}
OUT=${OUT:-/tmp/heartgate-overload-$(date -u +%Y%m%dT%H%M%SZ)}
# shellcheck source=bench/lib.sh
. bench/lib.sh
command -v haproxy >/dev/null || { echo "$NAME: haproxy is not installed (apt-get install haproxy)" >&2; exit 2; }
[ -f loadgen/target/loadgen.jar ] || { echo "$NAME: loadgen/target/loadgen.jar missing; run mvn -B -DskipTests package" >&2; exit 2; }
mkdir -p "$OUT"
HEAVY=hg-heavy-caller-key; LIGHT=hg-light-caller-key
LIGHT_PRIORITY=${LIGHT_PRIORITY:-0} # the light caller's key class in the gateway queue (priority=)
printf 'heavy %s\nlight %s priority=%s\n' "$(printf %s "$HEAVY" | sha256sum | cut -d' ' -f1)" \
  "$(printf %s "$LIGHT" | sha256sum | cut -d' ' -f1)" "$LIGHT_PRIORITY" > "$WORK/api-keys"

# The embedded broker lives in a scheduler of its own that takes no traffic.
start_broker_host

nginx_with "$(cat <<NGINX
  upstream rr { server 127.0.0.1:19401; server 127.0.0.1:19402; server 127.0.0.1:19403; keepalive 64; }
  upstream lc { least_conn; server 127.0.0.1:19401; server 127.0.0.1:19402; server 127.0.0.1:19403; keepalive 64; }
  server { listen 127.0.0.1:19390; location / { proxy_pass http://rr; proxy_http_version 1.1;
    proxy_set_header Connection ""; proxy_buffering off; proxy_read_timeout 120s; } }
  server { listen 127.0.0.1:19392; location / { proxy_pass http://lc; proxy_http_version 1.1;
    proxy_set_header Connection ""; proxy_buffering off; proxy_read_timeout 120s; } }
NGINX
)"
cat > "$WORK/haproxy.cfg" <<HAPROXY
global
  maxconn 4096
  pidfile $WORK/haproxy.pid
defaults
  mode http
  timeout connect 5s
  timeout client 120s
  timeout server 120s
  timeout queue ${QUEUE_TIMEOUT}s
frontend rr
  bind 127.0.0.1:19391
  default_backend rr
frontend lc
  bind 127.0.0.1:19393
  default_backend lc
backend rr
  balance roundrobin
  server s1 127.0.0.1:19401 maxconn 4
  server s2 127.0.0.1:19402 maxconn 4
  server s3 127.0.0.1:19403 maxconn 4
backend lc
  balance leastconn
  server s1 127.0.0.1:19401 maxconn 4
  server s2 127.0.0.1:19402 maxconn 4
  server s3 127.0.0.1:19403 maxconn 4
HAPROXY
haproxy -D -f "$WORK/haproxy.cfg"
sleep 0.5
[ -f "$WORK/haproxy.pid" ] && PIDS+=("$(cat "$WORK/haproxy.pid")")

NODE_PIDS=()
start_nodes() { # start_nodes CAPACITY DELAY1 DELAY2 DELAY3: three sims with agents (1 s heartbeats)
  local capacity=$1; shift
  local i=1
  for delay in "$@"; do
    ${SIM_CPUS:+taskset -c "$SIM_CPUS"} java -Xmx128m -XX:+UseSerialGC -jar inference-sim/target/inference-sim.jar --port 1940$i --name gpu-$i \
      --models llama3:8b --tokens "$TOKENS" --token-delay "$delay" --first-token-delay "$FIRST_TOKEN" \
      --max-concurrency 4 --max-queue "$NODE_QUEUE" > "$WORK/sim-$i.log" 2>&1 &
    NODE_PIDS+=($!); PIDS+=($!); i=$((i + 1))
  done
  for i in 1 2 3; do wait_for "$WORK/sim-$i.log" "listening"; done
  for i in 1 2 3; do
    java -Xmx96m -XX:+UseSerialGC -jar heartbeat-agent/target/heartbeat-agent.jar --kafka "$KAFKA" \
      --node-id "gpu-$i" --url "http://127.0.0.1:1940$i" --backend vllm --interval 1s --capacity "$capacity" \
      --nvidia-smi /nonexistent > "$WORK/agent-$i.log" 2>&1 &
    NODE_PIDS+=($!); PIDS+=($!)
  done
}

sim_readings() { # per sim: when read (s), the slot time it has spent generating and the tokens it has sent, since it started
  local i stats slot sent
  for i in 1 2 3; do
    printf '%s ' "$(date +%s.%N)"
    stats=$(curl -sf --max-time 5 "127.0.0.1:1940$i/sim/stats")
    slot=$(grep -o '"busySlotSeconds":[0-9.eE+-]*' <<< "$stats" | cut -d: -f2)
    sent=$(grep -o '"tokensSent":[0-9]*' <<< "$stats" | cut -d: -f2)
    printf '%s %s\n' "${slot:-nan}" "${sent:-nan}" # nan: the sim did not answer (the row keeps its other figures)
  done
}

busy_refusals() { # requests the three sims refused because their own queue was full
  local sum=0 n
  for i in 1 2 3; do
    n=$(curl -s "127.0.0.1:1940$i/sim/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["rejectedBusy"])')
    sum=$((sum + n))
  done
  echo "$sum"
}

SCHED=""
start_scheduler() { # start_scheduler LOG FLAGS...
  local log=$1; shift
  $OWN_SESSION java -Xmx512m ${SCHED_JAVA_OPTS:-} -jar scheduler/target/scheduler.jar --kafka "$KAFKA" --bind 127.0.0.1 --port 19080 \
    --admin-port 19081 --queue-timeout "${QUEUE_TIMEOUT}s" --events-topic "bench-events-$(date +%s%N)" "$@" > "$log" 2>&1 &
  SCHED=$!; PIDS+=($SCHED)
  wait_for "$log" "proxy listening"
  wait_routable 3
}

stop_scheduler() {
  if [ -n "$SCHED" ]; then kill "$SCHED"; while kill -0 "$SCHED" 2>/dev/null; do sleep 0.1; done; fi
  SCHED=""
}

loadgen() { # [SECONDS_=N] loadgen PORT LABEL OUTFILE FLAGS...: arrivals for SECONDS_ seconds (default DURATION)
  local port=$1 label=$2 out=$3; shift 3
  java -Xmx384m -jar loadgen/target/loadgen.jar --url "http://127.0.0.1:$port" --api openai --duration "${SECONDS_:-$DURATION}s" \
    --timeout 60s --max-tokens "$TOKENS" --min-tokens "$MIN_TOKENS" --label "$label" --out "$out" "$@" > /dev/null
}

row1() { # one row of part 1
  local name=$1 port=19080 capacity=0 busy
  case $name in
    idle|scheduler+capacity|scheduler+reserve) capacity=4 ;;
  esac
  start_nodes "$capacity" "$TOKEN_DELAY" "$TOKEN_DELAY" "$TOKEN_DELAY"
  case $name in
    nginx) port=19390 ;;
    haproxy) port=19391 ;;
    scheduler+reserve) start_scheduler "$WORK/scheduler-1-$name.log" --strategy "$STRATEGY1" --api-keys "$WORK/api-keys" \
      --reserve-slots "$RESERVE_SLOTS" ;;
    *) start_scheduler "$WORK/scheduler-1-$name.log" --strategy "$STRATEGY1" --api-keys "$WORK/api-keys" ;;
  esac
  sleep 2 # every agent's first heartbeat carries its capacity
  if [ "$name" != idle ]; then
    SECONDS_=$((DURATION + WARMUP)) loadgen "$port" heavy "$OUT/1-$name-heavy.json" --rate "$HEAVY_RATE" --keys "$HEAVY" --seed "$HEAVY_SEED" &
    local heavy=$!
  fi
  # the sims' busy slot time at the window's start and end (the load generators' JVMs start in about 0.5 s)
  ( sleep "$WARMUP.5"; sim_readings > "$WORK/sims-start"; sleep "$((DURATION - 1))"
    sim_readings > "$WORK/sims-end" ) &
  local slots=$!
  SECONDS_=$((DURATION + WARMUP)) loadgen "$port" light "$OUT/1-$name-light.json" --rate "$LIGHT_RATE" --keys "$LIGHT" --seed "$LIGHT_SEED"
  [ "$name" != idle ] && wait "$heavy"
  wait "$slots"
  busy=$(busy_refusals)
  python3 - "$OUT" "$name" "$busy" "$WARMUP" "$DURATION" "$WORK/sims-start" "$WORK/sims-end" \
    >> "$OUT/part1.jsonl" <<'PY'
import json, math, os, sys
out, name, busy, warmup, duration = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
def readings(path):
    try:
        return [[float(x) for x in line.split()] for line in open(path)]
    except (OSError, ValueError):
        return []
start, end = readings(sys.argv[6]), readings(sys.argv[7])
# each sim's busy slot time over the time between its two readings, over its 4 slots (the mean of the
# three), and the tokens the three sent per second between them: the fleet's work, whatever completed;
# null when a reading is missing
slots_busy = tokens_sent = None
pairs = list(zip(start, end))
if len(pairs) == 3 and all(len(x) == 3 and len(y) == 3 and y[0] > x[0] for x, y in pairs):
    slots_busy = round(sum((y[1] - x[1]) / (y[0] - x[0]) / 4 for x, y in pairs) / 3, 4)
    tokens_sent = round(sum((y[2] - x[2]) / (y[0] - x[0]) for x, y in pairs), 1)
    if math.isnan(slots_busy) or math.isnan(tokens_sent):
        slots_busy = tokens_sent = None
def rank(sorted_values, p):  # nearest rank, as loadgen's own percentiles
    return round(sorted_values[max(0, math.ceil(p / 100 * len(sorted_values)) - 1)], 1) if sorted_values else None
row = {"row": name, "nodeBusy503": busy, "slotsBusy": slots_busy, "tokensSent": tokens_sent}
for caller in ("heavy", "light"):
    path = os.path.join(out, f"1-{name}-{caller}.json")
    if not os.path.exists(path):
        continue
    every = json.load(open(path))["requests"]
    reqs = [q for q in every if q["scheduledMs"] >= warmup * 1000]
    ok = sorted(q["ttftMs"] for q in reqs if q["kind"] == "ok")
    errors = {}
    for q in reqs:
        if q["kind"] != "ok":
            errors[q["kind"]] = errors.get(q["kind"], 0) + 1
    # goodput: requests of this caller completed within the window, whenever they arrived
    done = [q for q in every
            if q["kind"] == "ok" and warmup * 1000 <= q["scheduledMs"] + q["totalMs"] < (warmup + duration) * 1000]
    row[caller] = {"sent": len(reqs), "ok": len(ok), "goodput": round(len(done) / duration, 2),
                   "tokensPerSecond": round(sum(q["tokens"] for q in done) / duration, 1),
                   "ttftP50": rank(ok, 50), "ttftP99": rank(ok, 99), "errors": errors}
print(json.dumps(row))
PY
  stop_scheduler
  stop_nodes 3
  tail -1 "$OUT/part1.jsonl" >&2
}

row2() { # one row of part 2
  local name=$1 port=19080
  start_nodes 4 15ms 30ms 60ms
  case $name in
    nginx) port=19390 ;;
    nginx-least-conn) port=19392 ;;
    haproxy-leastconn) port=19393 ;;
    *) start_scheduler "$WORK/scheduler-2-$name.log" --strategy "$name" ;;
  esac
  sleep 2
  loadgen "$port" "$name" "$OUT/2-$name.json" --rate 200 --arrivals uniform --max-in-flight "$CLIENTS" --seed 9
  python3 - "$OUT/2-$name.json" "$name" >> "$OUT/part2.jsonl" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ok = [s for s in r["requests"] if s.get("kind") == "ok"]
mean = round(sum(s["totalMs"] for s in ok) / len(ok), 1) if ok else None
print(json.dumps({"row": sys.argv[2], "ok": r["counts"]["ok"], "failed": r["counts"]["failed"],
                  "goodput": r["goodput"], "ttftP50": r["ttftMs"]["p50"], "ttftP99": r["ttftMs"]["p99"],
                  "meanTotalMs": mean, "errors": r["counts"]["failedByKind"]}))
PY
  stop_scheduler
  stop_nodes 3
  tail -1 "$OUT/part2.jsonl" >&2
}

: > "$OUT/part1.jsonl"; : > "$OUT/part2.jsonl"
for part in $PARTS; do
  if [ "$part" = 1 ]; then for name in $ROWS1; do row1 "$name"; done; fi
  if [ "$part" = 2 ]; then for name in $ROWS2; do row2 "$name"; done; fi
done

echo
echo "## Overload benchmark $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores"
python3 - "$OUT" "$DURATION" "$HEAVY_RATE" "$LIGHT_RATE" "$CLIENTS" <<'PY'
import json, os, sys
out, duration, heavy, light, clients = sys.argv[1:6]
def rows(name):
    p = os.path.join(out, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []
one, two = rows("part1.jsonl"), rows("part2.jsonl")
json.dump({"part1": one, "part2": two}, open(os.path.join(out, "summary.json"), "w"), indent=2)
def errs(e):
    return ", ".join(f"{k} {v}" for k, v in sorted(e.items())) or "-"
if one:
    idle = next((r["light"]["ttftP99"] for r in one if r["row"] == "idle"), None)
    print(f"\nPart 1: 3 sims x 4 slots, heavy caller {heavy}/s and light caller {light}/s; the requests that arrived"
          f" in {duration} s after the warm-up; TTFT of completed requests, ms.\n")
    print("| row | caller | sent | completed | goodput /s | TTFT p50 | TTFT p99 | light p99 / idle p99 | errors | nodes' 503 busy |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in one:
        for caller in ("heavy", "light"):
            if caller not in r:
                continue
            c = r[caller]
            ratio = "-"
            if caller == "light" and idle and c["ttftP99"]:
                ratio = f"{c['ttftP99'] / idle:.2f}"
            print(f"| {r['row']} | {caller} | {c['sent']} | {c['ok']} | {c['goodput']} | {c['ttftP50']} | {c['ttftP99']} |"
                  f" {ratio} | {errs(c['errors'])} | {r['nodeBusy503']} |")
    print("\nBoth callers together, within the window: requests completed and the tokens of those answers (per"
          " second); and the sims' own figures: tokens sent per second and how busy the 12 slots were.\n")
    print("| row | goodput /s | tokens of completed answers /s | tokens sent /s | slots busy |")
    print("| --- | --- | --- | --- | --- |")
    for r in one:
        callers = [r[c] for c in ("heavy", "light") if c in r]
        busy = "-" if r["slotsBusy"] is None else f"{100 * r['slotsBusy']:.1f}%"
        print(f"| {r['row']} | {sum(c['goodput'] for c in callers):.2f} | {sum(c['tokensPerSecond'] for c in callers):.1f} |"
              f" {r['tokensSent'] if r['tokensSent'] is not None else '-'} | {busy} |")
if two:
    print(f"\nPart 2: sims of 15, 30 and 60 ms per token, 4 slots each, {clients} closed-loop streaming clients for"
          f" {duration} s; ms.\n")
    print("| row | completed | TTFT p50 | TTFT p99 | mean completion | errors |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in two:
        print(f"| {r['row']} | {r['ok']} | {r['ttftP50']} | {r['ttftP99']} | {r['meanTotalMs']} | {errs(r['errors'])} |")
PY
echo
echo "Results: $OUT (one loadgen JSON per caller and row, part1.jsonl, part2.jsonl, summary.json)"

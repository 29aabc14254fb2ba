# Shared by bench/proxy.sh and bench/variants.sh; source it after setting NAME (the script's name
# for messages). Sets WORK (a temp dir) and PIDS (processes to stop), both cleaned up on exit
# (KEEP_LOGS=1 keeps WORK, with every process's log, and says where).
WORK=$(mktemp -d /tmp/heartgate-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$WORK/nginx.pid" ] && kill "$(cat "$WORK/nginx.pid")" 2>/dev/null || true
  sleep 1
  if [ "${KEEP_LOGS:-0}" = 1 ]; then echo "$NAME: logs kept in $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

for tool in java wrk nginx python3 curl; do
  command -v "$tool" >/dev/null || { echo "$NAME: $tool is not installed" >&2; exit 2; }
done
for jar in scheduler/target/scheduler.jar heartbeat-agent/target/heartbeat-agent.jar inference-sim/target/inference-sim.jar; do
  [ -f "$jar" ] || { echo "$NAME: $jar missing; run mvn -B -DskipTests package" >&2; exit 2; }
done

wait_for() { # wait_for FILE PATTERN
  for _ in $(seq 1 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "timed out waiting for '$2' in $1" >&2; cat "$1" >&2; exit 1
}

cpu_ticks() { # total user+system clock ticks of the given pids
  local sum=0
  for p in "$@"; do
    [ -r "/proc/$p/stat" ] || continue
    read -r -a f < <(sed 's/^.*) //' "/proc/$p/stat")
    sum=$((sum + f[11] + f[12]))
  done
  echo "$sum"
}

# Every proxy under test in a session of its own, as nginx and haproxy put themselves when they
# daemonize: with the kernel's autogroup scheduling (on by default in Debian's kernels) each session
# is one group with an equal share of a busy CPU, so a proxy left in the script's session shares one
# group with the load tool and the nodes while nginx has a group to itself. On a 2-core machine that
# made the scheduler's event loops wait about four times as long as nginx's workers for a core.
# (In production each runs as a service of its own.) Usage: $OWN_SESSION java ... &
OWN_SESSION=setsid

start_broker_host() { # [FLAGS...]: the embedded broker in a scheduler of its own that takes no traffic (ports 19180/19181); sets KAFKA
  java -Xmx256m -jar scheduler/target/scheduler.jar --embedded-kafka-port 0 --bind 127.0.0.1 --port 19180 \
    --admin-port 19181 "$@" > "$WORK/broker-host.log" 2>&1 &
  PIDS+=($!)
  wait_for "$WORK/broker-host.log" "proxy listening"
  KAFKA=$(grep -o 'kafka bootstrap [0-9.:]*' "$WORK/broker-host.log" | awk '{print $3}')
}

nginx_with() { # nginx_with HTTP_BODY: starts nginx with the shared preamble and HTTP_BODY inside http { } (NGINX_WORKERS: auto)
  printf 'worker_processes %s;\npid %s/nginx.pid;\nerror_log %s/nginx-error.log warn;\nevents { worker_connections 4096; }\nhttp {\n  access_log off;\n%s\n}\n' \
    "${NGINX_WORKERS:-auto}" "$WORK" "$WORK" "$1" > "$WORK/nginx.conf"
  nginx -c "$WORK/nginx.conf"
}

nginx_pids() { pgrep -f "nginx: (master|worker)" | tr '\n' ' '; }

start_nginx() { # nginx as the closest equivalent: port 19090 -> fast sims 1900x, 19091 -> stream sims 1901x
  nginx_with "$(cat <<'NGINX'
  upstream fast { server 127.0.0.1:19001; server 127.0.0.1:19002; server 127.0.0.1:19003; keepalive 256; }
  upstream stream { server 127.0.0.1:19011; server 127.0.0.1:19012; server 127.0.0.1:19013; keepalive 256; }
  server {
    listen 127.0.0.1:19090;
    location / { proxy_pass http://fast; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; }
  }
  server {
    listen 127.0.0.1:19091;
    location / { proxy_pass http://stream; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; }
  }
NGINX
)"
  sleep 0.5
}

wait_routable() { # wait_routable COUNT [ADMIN_PORT]: until the scheduler's admin API (19081) shows COUNT routable nodes
  for _ in $(seq 1 300); do
    [ "$(curl -s "127.0.0.1:${2:-19081}/admin/nodes" | grep -o '"routable":true' | wc -l)" -eq "$1" ] && return 0; sleep 0.1
  done
  echo "$NAME: fewer than $1 nodes became routable" >&2; exit 1
}

wrk_measure() { # wrk_measure PORT CONNECTIONS SECONDS PIDS...: small chat completions against PORT
  # Sets WRK_RPS, WRK_P50, WRK_P99, WRK_P999, WRK_ERRORS and WRK_CPU (user+system us per request of PIDS, or n/a).
  # WRK_CLOSE=1: every request on a new connection (Connection: close).
  local port=$1 conns=$2 seconds=$3; shift 3
  local before after out reqs close=()
  [ "${WRK_CLOSE:-0}" = 1 ] && close=(-H 'Connection: close')
  before=$(cpu_ticks "$@")
  out=$(MODEL=bench-fast wrk -t2 -c"$conns" -d"${seconds}s" --latency "${close[@]}" -s bench/chat-completion.lua "http://127.0.0.1:$port")
  after=$(cpu_ticks "$@")
  WRK_RPS=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  WRK_P50=$(echo "$out" | awk '$1=="50%" {print $2}')
  WRK_P99=$(echo "$out" | awk '$1=="99%" {print $2}')
  WRK_ERRORS=$(echo "$out" | awk '/non-2xx or socket errors/ {print $NF}')
  WRK_P999=$(echo "$out" | awk '/p99.9 latency us/ {printf "%.2fms", $NF / 1000}')
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  if [ $# -gt 0 ] && [ "${reqs:-0}" -gt 0 ]; then
    WRK_CPU=$(python3 -c "print(f'{($after-$before)/$(getconf CLK_TCK)/$reqs*1e6:.1f}')")
  else
    WRK_CPU="n/a"
  fi
}

stop_nodes() { # stop_nodes SIMS: NODE_PIDS holds SIMS sims, then their agents; agents go first, so each leaves with its tombstone
  local sims=$1 p
  for p in "${NODE_PIDS[@]:$sims}"; do kill "$p" 2>/dev/null || true; done
  for p in "${NODE_PIDS[@]:$sims}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; done
  for p in "${NODE_PIDS[@]:0:$sims}"; do kill "$p" 2>/dev/null || true; done
  for p in "${NODE_PIDS[@]:0:$sims}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.1; done; done
  NODE_PIDS=()
}

start_fast_sims() { # three sims with no token delay on ports 19001-19003, model bench-fast
  local i
  for i in 1 2 3; do
    java -Xmx256m -jar inference-sim/target/inference-sim.jar --port 1900$i --name fast-$i --models bench-fast \
      --token-delay 0ms --first-token-delay 0ms --max-concurrency 512 > "$WORK/fast-$i.log" 2>&1 &
    PIDS+=($!)
  done
  for i in 1 2 3; do wait_for "$WORK/fast-$i.log" "listening"; done
}

start_fast_stack() { # start_fast_stack JAR [JVM OPTIONS...]: the fast sims, the scheduler JAR on 19080/19081 with its embedded Kafka, three agents; sets SCHED
  local jar=$1 i; shift
  start_fast_sims
  $OWN_SESSION java "$@" -jar "$jar" --embedded-kafka-port 0 --bind 127.0.0.1 --port 19080 --admin-port 19081 \
    --strategy round-robin > "$WORK/scheduler.log" 2>&1 &
  SCHED=$!
  PIDS+=($SCHED)
  wait_for "$WORK/scheduler.log" "proxy listening"
  local kafka
  kafka=$(grep -o 'kafka bootstrap [0-9.:]*' "$WORK/scheduler.log" | awk '{print $3}')
  for i in 1 2 3; do
    java -Xmx96m -jar heartbeat-agent/target/heartbeat-agent.jar --kafka "$kafka" --node-id "fast-$i" \
      --url "http://127.0.0.1:1900$i" --backend ollama --interval 1s --nvidia-smi /nonexistent \
      > "$WORK/agent-$i.log" 2>&1 &
    PIDS+=($!)
  done
  wait_routable 3
}

duration_ms() { # duration_ms SETTING VALUE: VALUE (500ms, 1s, 2.5s, 1m) in ms, or exit 2 naming SETTING
  case $2 in
    *ms) [[ ${2%ms} =~ ^[0-9]+$ ]] && { echo "${2%ms}"; return; } ;;
    *s) [[ ${2%s} =~ ^[0-9]+(\.[0-9]+)?$ ]] && { awk -v v="${2%s}" 'BEGIN { printf "%d\n", v * 1000 }'; return; } ;;
    *m) [[ ${2%m} =~ ^[0-9]+$ ]] && { echo $((${2%m} * 60000)); return; } ;;
  esac
  echo "$NAME: $1 must be a duration such as 500ms, 1s or 1m, was '$2'" >&2
  exit 2
}

whole_numbers() { # whole_numbers SETTING...: exit 2 naming the first setting that is not whole numbers
  local setting
  for setting in "$@"; do
    [[ ${!setting} =~ ^[0-9]+( [0-9]+)*$ ]] || { echo "$NAME: $setting must be whole numbers, was '${!setting}'" >&2; exit 2; }
  done
}

#!/usr/bin/env bash
# The README's five-minute tour, run as written: the demo starts, a stream arrives, the dashboard
# answers, and a node frozen under load costs no failed request. CI runs it after `mvn -B verify`
# (which builds the jars); it needs ports 8080, 8081 and 9092 free, as the tour does.
set -euo pipefail
cd "$(dirname "$0")/.."
JAR=scheduler/target/scheduler.jar
[ -f "$JAR" ] || mvn -B -q -DskipTests package
work=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "tour: $*" >&2; echo "--- demo output:" >&2; cat "$work/demo.log" >&2; exit 1; }

echo "== tour: java -jar $JAR --demo 3"
java -jar "$JAR" --demo 3 > "$work/demo.log" 2>&1 &
pid=$!
for _ in $(seq 1 240); do
  grep -q "Press Ctrl-C" "$work/demo.log" && break
  kill -0 "$pid" 2>/dev/null || fail "the demo exited"
  sleep 0.5
done
grep -q "Press Ctrl-C" "$work/demo.log" || fail "the demo was not up within 120 s"

echo "== tour: a stream through the demo"
curl -sN --max-time 30 http://localhost:8080/v1/chat/completions -H 'Content-Type: application/json' \
     -d '{"model": "llama3:8b", "stream": true, "messages": [{"role": "user", "content": "Hello"}]}' > "$work/stream"
tokens=$(grep -c '^data: {' "$work/stream" || true)
[ "$tokens" -ge 2 ] && grep -q '^data: \[DONE\]' "$work/stream" || fail "no stream: $(head -c 300 "$work/stream")"
echo "$tokens events, then [DONE]"

echo "== tour: the dashboard and the nodes"
curl -sf --max-time 10 http://localhost:8081/ > "$work/dashboard" || fail "the dashboard did not answer"
grep -qi '<html' "$work/dashboard" || fail "the dashboard answered no page"
listed=$(curl -sf --max-time 10 http://localhost:8081/admin/nodes | grep -o '"demo-gpu-[0-9]"' | sort -u | wc -l)
[ "$listed" -eq 3 ] || fail "/admin/nodes lists $listed demo nodes, not 3"

echo "== tour: freeze a node under load"
freeze=$(grep -o "curl -X POST http://[0-9.:]*/sim/faults" "$work/demo.log" | head -1)
[ -n "$freeze" ] || fail "the demo printed no freeze command"
seq 60 | xargs -P 6 -I{} curl -s -o /dev/null -w '%{http_code}\n' --max-time 60 \
    http://localhost:8080/v1/chat/completions -H 'Content-Type: application/json' \
    -d '{"model": "llama3:8b", "messages": [{"role": "user", "content": "Hi"}]}' > "$work/codes" &
load=$!
sleep 2
$freeze -s -d '{"hang": true, "failHealth": true}' > /dev/null
wait "$load"
sort "$work/codes" | uniq -c
ok=$(grep -c '^200$' "$work/codes" || true)
[ "$ok" -eq 60 ] || fail "$ok of 60 requests answered 200 with a node frozen"
curl -sf --max-time 10 http://localhost:8081/admin/nodes > "$work/nodes" || fail "/admin/nodes did not answer"
grep -q '"DOWN"' "$work/nodes" || fail "the frozen node is not DOWN"
echo "tour: every request answered; the frozen node is listed DOWN"

-- wrk script: non-streaming OpenAI chat completion against the simulator or the scheduler.
-- usage: wrk -t2 -c64 -d20s -s bench/chat-completion.lua http://127.0.0.1:PORT
wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"model":"llama3:8b","messages":[{"role":"user","content":"Say hello"}]}'

function done(summary, latency, requests)
  io.write(string.format("non-2xx or socket errors: %d\n",
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end

-- wrk script: OpenAI chat completion (non-streaming unless STREAM=1) against a sim, nginx or the scheduler.
-- usage: [API_KEY=KEY] [STREAM=1] MODEL=llama3:8b wrk -t2 -c64 -d20s -s bench/chat-completion.lua http://127.0.0.1:PORT
local model = os.getenv("MODEL") or "llama3:8b"
wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.headers["Content-Type"] = "application/json"
-- STREAM=1 asks for an SSE stream (what --force-usage rewrites and filters).
local stream = os.getenv("STREAM")
local streamed = (stream and stream ~= "" and stream ~= "0") and ',"stream":true' or ''
wrk.body = '{"model":"' .. model .. '","messages":[{"role":"user","content":"Say hello"}]' .. streamed .. '}'
-- API_KEY=KEY sends it as a client would (Authorization: Bearer), for a scheduler with --api-keys.
local key = os.getenv("API_KEY")
if key and key ~= "" then
  wrk.headers["Authorization"] = "Bearer " .. key
end

function done(summary, latency, requests)
  io.write(string.format("non-2xx or socket errors: %d\n",
    summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
  io.write(string.format("p99.9 latency us: %d\n", latency:percentile(99.9)))
end

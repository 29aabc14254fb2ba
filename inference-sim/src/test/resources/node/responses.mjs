// Streams one answer through the official openai client's Responses API, unchanged, continues it with
// previous_response_id, retrieves it, and continues an id the node never made; one line each:
// STREAM, CONTINUED, RETRIEVED, MISSING. Run by NodeClientsIT: node responses.mjs http://127.0.0.1:PORT MODEL
import OpenAI from 'openai';

const [base, model] = process.argv.slice(2);
const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'not-needed', maxRetries: 0 });
const instructions = 'You answer in one short sentence, politely. '.repeat(8);

let text = '';
const types = [];
let completed;
const stream = await openai.responses.create({ model, instructions, input: 'Say hello', stream: true });
for await (const event of stream) {
  types.push(event.type);
  if (event.type === 'response.output_text.delta') {
    text += event.delta;
  } else if (event.type === 'response.completed') {
    completed = event.response;
  }
}
console.log('STREAM ' + JSON.stringify({ text, types: [...new Set(types)], status: completed.status,
  output: completed.output[0].content[0].text, outputTokens: completed.usage.output_tokens }));

const next = await openai.responses.create({ model, instructions, input: 'And then?',
  previous_response_id: completed.id });
console.log('CONTINUED ' + JSON.stringify({ text: next.output_text, previous: next.previous_response_id === completed.id,
  cached: next.usage.input_tokens_details.cached_tokens }));

const retrieved = await openai.responses.retrieve(completed.id);
console.log('RETRIEVED ' + JSON.stringify({ same: retrieved.id === completed.id, text: retrieved.output_text }));

try {
  await openai.responses.create({ model, input: 'Hello?', previous_response_id: 'resp_0123' });
  console.log('MISSING none');
} catch (e) {
  console.log('MISSING ' + JSON.stringify({ status: e.status, type: e.type, param: e.param, message: e.error?.message }));
}

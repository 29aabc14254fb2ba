// Streams one chat through the official openai client, and one raw generate and one chat through
// the official ollama client, unchanged, and prints what each assembled and the ids it saw. Run by the
// scheduler's stream-migration test against a proxy whose nodes die mid-answer:
//   node migrated.mjs http://127.0.0.1:PORT MODEL
import OpenAI from 'openai';
import { Ollama } from 'ollama';

const [base, model] = process.argv.slice(2);

const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'not-needed' });
let openaiText = '';
const ids = new Set();
const stream = await openai.chat.completions.create({
  model,
  messages: [{ role: 'user', content: 'Say hello' }],
  stream: true,
});
for await (const chunk of stream) {
  ids.add(chunk.id);
  openaiText += chunk.choices[0]?.delta?.content ?? '';
}
console.log('OPENAI ' + JSON.stringify({ text: openaiText, ids: [...ids] }));

const ollama = new Ollama({ host: base });
let ollamaText = '';
let done = false;
const parts = await ollama.generate({ model, prompt: 'Say hello', raw: true, stream: true });
for await (const part of parts) {
  ollamaText += part.response;
  done = part.done;
}
console.log('OLLAMA ' + JSON.stringify({ text: ollamaText, done }));

let chatText = '';
let chatDone = false;
const chat = await ollama.chat({ model, messages: [{ role: 'user', content: 'Say hello' }], stream: true });
for await (const part of chat) {
  chatText += part.message.content;
  chatDone = part.done;
}
console.log('OLLAMA_CHAT ' + JSON.stringify({ text: chatText, done: chatDone }));

// Streams one chat from the simulator through each official client library, unchanged, and prints
// what each one assembled. Run by NodeClientsIT: node clients.mjs http://127.0.0.1:PORT MODEL [API_KEY]
// With an API key, each client sends it the way its users would: openai's apiKey option, and an
// Authorization header for ollama (whose client has no key option of its own).
import OpenAI from 'openai';
import { Ollama } from 'ollama';

const [base, model, key] = process.argv.slice(2);

const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: key ?? 'not-needed' });
let openaiText = '';
const stream = await openai.chat.completions.create({
  model,
  messages: [{ role: 'user', content: 'Say hello' }],
  stream: true,
});
for await (const chunk of stream) {
  openaiText += chunk.choices[0]?.delta?.content ?? '';
}
console.log('OPENAI ' + JSON.stringify(openaiText));

const ollama = new Ollama(key ? { host: base, headers: { Authorization: `Bearer ${key}` } } : { host: base });
let ollamaText = '';
const parts = await ollama.chat({
  model,
  messages: [{ role: 'user', content: 'Say hello' }],
  stream: true,
});
for await (const part of parts) {
  ollamaText += part.message.content;
}
console.log('OLLAMA ' + JSON.stringify(ollamaText));

const tags = await ollama.list();
console.log('TAGS ' + JSON.stringify(tags.models.map((m) => m.name)));

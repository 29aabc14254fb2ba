// Lists the models behind a base URL through each official client library, unchanged, three times
// each, one line per call: MODELS (openai.models.list), TAGS (ollama.list), PS (ollama.ps), and
// RETRIEVE (openai.models.retrieve of MODEL). Run as: node catalogue.mjs http://127.0.0.1:PORT MODEL
import OpenAI from 'openai';
import { Ollama } from 'ollama';

const [base, model] = process.argv.slice(2);
const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'not-needed' });
const ollama = new Ollama({ host: base });

for (let i = 0; i < 3; i++) {
  const ids = [];
  for await (const m of openai.models.list()) {
    ids.push(m.id);
  }
  console.log('MODELS ' + JSON.stringify(ids));
  console.log('TAGS ' + JSON.stringify((await ollama.list()).models.map((m) => m.name)));
  console.log('PS ' + JSON.stringify((await ollama.ps()).models.map((m) => m.name)));
}
console.log('RETRIEVE ' + JSON.stringify((await openai.models.retrieve(model)).id));

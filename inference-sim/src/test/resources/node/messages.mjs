// Streams one message through the official Anthropic client, unchanged, as a coding agent does
// (its session header on every request), twice; prints one MESSAGE line each with the text the
// client assembled and the usage of its final message. Run by the scheduler's agent-clients test:
//   node messages.mjs http://127.0.0.1:PORT MODEL SESSION
import Anthropic from '@anthropic-ai/sdk';

const [base, model, session] = process.argv.slice(2);
const client = new Anthropic({
  baseURL: base,
  apiKey: 'not-needed',
  maxRetries: 0,
  defaultHeaders: { 'x-claude-code-session-id': session },
});
const history = [];
for (const question of ['Say hello', 'And goodbye']) {
  history.push({ role: 'user', content: question });
  const stream = client.messages.stream({ model, max_tokens: 64, system: 'You are terse.', messages: history });
  let text = '';
  stream.on('text', (delta) => { text += delta; });
  const message = await stream.finalMessage();
  history.push({ role: 'assistant', content: text });
  console.log('MESSAGE ' + JSON.stringify({ text, usage: message.usage, stop: message.stop_reason }));
}

// A test agent program: three model calls through the `openai` package, a user message between them; with
// EDIT_SYSTEM=1 it changes its system prompt before the third call (the gateway splits the rollout there). Its
// reward is computed from what the model wrote (a random tiny model writes text), so groups have varied rewards.
// A task with `crash: true` exits with status 1 before calling the model.
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';

const task = JSON.parse(readFileSync(0, 'utf8'));
if (task.crash) {
  console.error('crashed on purpose');
  process.exit(1);
}
const client = new OpenAI({ maxRetries: 0 });
let messages = [{ role: 'system', content: 'You are terse.' }, { role: 'user', content: task.prompt }];
let written = '';
for (let call = 0; call < 3; call++) {
  if (call === 2 && process.env.EDIT_SYSTEM === '1') messages = [{ role: 'system', content: 'You are very terse.' }, ...messages.slice(1)];
  const message = (await client.chat.completions.create({ model: 'tiny', messages, max_tokens: 10 })).choices[0].message;
  written += message.content ?? '';
  messages.push(message, { role: 'user', content: 'go on' });
}
console.log(JSON.stringify({ reward: written.length % 3 === 0 ? 1 : 0 }));

#!/usr/bin/env node
/**
 * A shop-assistant agent written with the `openai` package: it looks up item prices and adds them up over several
 * model calls, then answers with the total. Nothing in it knows about longrun: the gateway is reached through
 * OPENAI_BASE_URL (read by the OpenAI client), the task comes as JSON on stdin (or LONGRUN_TASK), and the reward is
 * POSTed to LONGRUN_REWARD_URL and printed as the last stdout line.
 *
 *   node examples/openai-agent/agent.mjs < task.json        (with OPENAI_BASE_URL pointing at a rollout)
 *
 * AGENT_STREAM=1 makes every call a streamed one (server-sent events, accumulated here).
 */
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';

const PRICES = { apple: 0.5, pear: 0.75, bread: 2.25, milk: 1.2, cheese: 4.5, coffee: 6 };

const tools = [
  {
    type: 'function',
    function: {
      name: 'lookup_price',
      description: 'The unit price of a shop item, in euros.',
      parameters: { type: 'object', properties: { item: { type: 'string' } }, required: ['item'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'add',
      description: 'Adds a list of numbers.',
      parameters: { type: 'object', properties: { numbers: { type: 'array', items: { type: 'number' } } }, required: ['numbers'] },
    },
  },
];

function runTool(name, args) {
  if (name === 'lookup_price') {
    const price = PRICES[String(args.item).toLowerCase()];
    return price === undefined ? JSON.stringify({ error: `no item ${args.item}` }) : JSON.stringify({ item: args.item, price });
  }
  if (name === 'add') {
    const numbers = Array.isArray(args.numbers) ? args.numbers.map(Number) : [];
    return JSON.stringify({ sum: Math.round(numbers.reduce((a, b) => a + b, 0) * 100) / 100 });
  }
  return JSON.stringify({ error: `no tool ${name}` });
}

/** One call, streamed or not; returns the assistant message as the API would. */
async function complete(client, body) {
  if (process.env.AGENT_STREAM !== '1') return (await client.chat.completions.create(body)).choices[0].message;
  const stream = await client.chat.completions.create({ ...body, stream: true });
  const message = { role: 'assistant', content: '', tool_calls: [] };
  let reasoning = '';
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta ?? {};
    if (delta.content) message.content += delta.content;
    if (delta.reasoning_content) reasoning += delta.reasoning_content;
    for (const c of delta.tool_calls ?? []) {
      const slot = (message.tool_calls[c.index] ??= { id: c.id, type: 'function', function: { name: '', arguments: '' } });
      if (c.function?.name) slot.function.name += c.function.name;
      if (c.function?.arguments) slot.function.arguments += c.function.arguments;
    }
  }
  if (reasoning) message.reasoning_content = reasoning;
  if (message.tool_calls.length === 0) delete message.tool_calls;
  return message;
}

const task = JSON.parse(process.env.LONGRUN_TASK ?? readFileSync(0, 'utf8'));
const client = new OpenAI({ maxRetries: 0 });
const messages = [
  { role: 'system', content: 'You are a shop assistant. Look up the price of every item with lookup_price, add the costs with add, then tell the customer the total in euros.' },
  { role: 'user', content: task.prompt },
];
let answer = '';
for (let step = 0; step < (task.maxSteps ?? 8); step++) {
  const message = await complete(client, { model: 'policy', messages, tools, max_tokens: 256 });
  messages.push(message);
  if (!message.tool_calls?.length) {
    answer = message.content ?? '';
    break;
  }
  for (const call of message.tool_calls) {
    let args = {};
    try {
      args = JSON.parse(call.function.arguments);
    } catch {
      // a malformed call gets an error result, as a real tool runner would
    }
    messages.push({ role: 'tool', tool_call_id: call.id, content: runTool(call.function.name, args) });
  }
}

// Reward: 1 when the answer names the right total.
const numbers = (answer.match(/\d+(?:\.\d+)?/g) ?? []).map(Number);
const reward = numbers.some((n) => Math.abs(n - task.total) < 1e-6) ? 1 : 0;
if (process.env.LONGRUN_REWARD_URL) {
  await fetch(process.env.LONGRUN_REWARD_URL, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.OPENAI_API_KEY ?? ''}` },
    body: JSON.stringify({ reward, info: { answer: answer.slice(0, 200) } }),
  });
}
console.log(JSON.stringify({ reward }));

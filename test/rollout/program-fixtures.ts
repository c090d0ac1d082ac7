/**
 * Test fixtures for agent programs: a scripted policy that plays the two example agents' tasks (examples/openai-agent:
 * prices and a sum; examples/ai-sdk-agent: a temperature and its conversion) with tool calls, read off the prompt's
 * text, in any chat format. A random tiny model answers in text and never calls a tool, so the example programs are
 * driven by this scripted engine; the exactness of recorded log-probs is tested with the real tiny model separately.
 */
import type { ChatFormat } from '../../src/llm/chat-format.ts';
import type { ChatMessage } from '../../src/llm/messages.ts';
import assert from 'node:assert/strict';
import { ScriptedEngine, type GenerationRequest } from '../../src/rollout/inference.ts';
import type { RolloutRecord } from '../../src/serve/gateway.ts';

/** The assistant message the scripted policy writes next for a prompt's text. */
export function scriptedReply(text: string): ChatMessage {
  const order = /ORDER: ([^.?]*)[.?]/.exec(text);
  if (order) {
    const items = [...order[1].matchAll(/(\d+) (\w+)/g)].map((m) => ({ qty: Number(m[1]), item: m[2] }));
    const prices = new Map([...text.matchAll(/\{"item":"(\w+)","price":([\d.]+)\}/g)].map((m) => [m[1], Number(m[2])]));
    const missing = items.find((i) => !prices.has(i.item));
    if (missing) return { role: 'assistant', content: '', reasoning: `I need the price of ${missing.item}.`, toolCalls: [{ name: 'lookup_price', arguments: { item: missing.item } }] };
    const sum = /\{"sum":([\d.]+)\}/.exec(text);
    if (!sum) return { role: 'assistant', content: '', toolCalls: [{ name: 'add', arguments: { numbers: items.map((i) => Math.round(i.qty * prices.get(i.item)! * 100) / 100) } }] };
    return { role: 'assistant', content: `The total is ${sum[1]} euros.` };
  }
  const city = /CITY: (\w+)\./.exec(text);
  if (city) {
    const celsius = /"celsius":(-?\d+)\}/.exec(text);
    if (!celsius) return { role: 'assistant', content: '', reasoning: 'Look the temperature up first.', toolCalls: [{ name: 'get_temperature', arguments: { city: city[1] } }] };
    const f = /\{"fahrenheit":(-?\d+)\}/.exec(text);
    if (!f) return { role: 'assistant', content: '', toolCalls: [{ name: 'to_fahrenheit', arguments: { celsius: Number(celsius[1]) } }] };
    return { role: 'assistant', content: `It is ${f[1]} degrees Fahrenheit in ${city[1]}.` };
  }
  return { role: 'assistant', content: 'I cannot help with that.' };
}

/** A scripted engine that answers every prompt with `scriptedReply` of its text; log-probs −0.25 + a small per-call shift. */
export function scriptedAgentEngine(format: ChatFormat): ScriptedEngine {
  return new ScriptedEngine((r: GenerationRequest, i: number) => {
    const tokens = format.renderCompletion(scriptedReply(format.tokenizer.decode([...r.tokens])));
    return { tokens, logprobs: tokens.map((_, k) => -0.25 - 0.001 * ((i + k) % 7)) };
  });
}

/**
 * Every engine request of the rollout is a prefix of its row's ids, and the scripted completion follows it there with
 * mask 1 and the engine's log-probs; the row's mask has 1s on exactly those completions.
 */
export function assertRowsExact(format: ChatFormat, engine: ScriptedEngine, record: RolloutRecord): void {
  const indexed = engine.requests.map((r, i) => ({ r, i })).filter(({ r }) => r.session?.startsWith(`${record.id}#`));
  assert.equal(indexed.length, record.calls.length);
  const sampled = record.rows.map(() => 0);
  for (const { r, i } of indexed) {
    const rowIndex = Number(r.session!.split('#')[1]);
    const row = record.rows[rowIndex]!;
    const full = [...row.promptIds, ...row.responseIds];
    const mask = [...row.promptIds.map(() => 0), ...row.responseMask];
    const lps = [...row.promptIds.map(() => 0), ...row.rolloutLogprobs];
    assert.deepEqual([...r.tokens], full.slice(0, r.tokens.length), `call ${i}: the engine saw the row's ids`);
    assert.ok(mask.slice(row.promptIds.length, r.tokens.length).every((m, k) => m === 0 || full[row.promptIds.length + k] !== undefined));
    const completion = format.renderCompletion(scriptedReply(format.tokenizer.decode([...r.tokens])));
    const at = r.tokens.length;
    assert.deepEqual(full.slice(at, at + completion.length), completion, `call ${i}: the sampled ids follow verbatim`);
    assert.ok(mask.slice(at, at + completion.length).every((m) => m === 1));
    completion.forEach((_, k) => assert.ok(Math.abs(lps[at + k]! - (-0.25 - 0.001 * ((i + k) % 7))) < 1e-12));
    sampled[rowIndex] += completion.length;
  }
  record.rows.forEach((row, k) => assert.equal(row.responseMask.reduce((a, b) => a + b, 0), sampled[k], `row ${k}: mask 1 only on sampled ids`));
}

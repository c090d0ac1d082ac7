/**
 * The trajectory gateway's cost (src/serve/gateway.ts), with an engine that costs nothing, so what is measured is the
 * gateway and the program harness, not the model:
 *
 * 1. Per-call overhead against the in-process rollout path. The same conversation (the shop agent of
 *    examples/openai-agent: price look-ups, a sum, an answer, here stretched to `--calls` look-ups) is sampled
 *    (a) the in-process way, as the agent loop does it (src/rollout/agent-loop.ts): one chat session, the new messages
 *    rendered and appended, the engine called on the ids; (b) through the gateway over HTTP with the `openai` package
 *    in this process, the whole history sent each call, rendered, matched against the row and recorded. Reported per
 *    call: median time of each and the difference, at the first calls and at the last (the history grows).
 * 2. Rollouts/s of whole programs: `examples/openai-agent/agent.mjs` run as child processes by the program sampler
 *    (process start, the SDK, four calls, the reward POST), at 1 and 16 concurrent programs; and the same agent as
 *    in-process async functions (no process start), at 1 and 16.
 *
 * The engine replays the scripted policy of the tests (test/rollout/program-fixtures.ts) instantly; tokenizer
 * o200k_harmony, chat format harmony. Writes bench/results/gateway.{json,md}.
 * Usage: nice -n 10 npm run bench:gateway [-- --calls 24 --reps 20 --rollouts 32]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { createChatFormat } from '../src/llm/formats.ts';
import { loadTokenizer } from '../src/llm/load-tokenizer.ts';
import type { ChatFormat } from '../src/llm/chat-format.ts';
import type { ChatMessage, ToolSpec } from '../src/llm/messages.ts';
import { ScriptedEngine } from '../src/rollout/inference.ts';
import { ProgramGroupSampler, type ProgramTask } from '../src/rollout/program-sampler.ts';
import { startGateway } from '../src/serve/gateway.ts';
import { scriptedReply } from '../test/rollout/program-fixtures.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`--${name} needs a positive integer`);
  return v;
}

const CALLS = arg('calls', 24);
const REPS = arg('reps', 20);
const ROLLOUTS = arg('rollouts', 32);

const PRICES: Record<string, number> = { apple: 0.5, pear: 0.75, bread: 2.25, milk: 1.2, cheese: 4.5, coffee: 6 };
const ITEMS = Object.keys(PRICES);
const tools: ToolSpec[] = [
  { type: 'function', function: { name: 'lookup_price', description: 'The unit price of a shop item, in euros.', parameters: { type: 'object', properties: { item: { type: 'string' } }, required: ['item'] } } },
  { type: 'function', function: { name: 'add', description: 'Adds a list of numbers.', parameters: { type: 'object', properties: { numbers: { type: 'array', items: { type: 'number' } } }, required: ['numbers'] } } },
];
/** An order of `n` distinct-looking lines (item names repeat with a number suffix the scripted policy looks up in turn). */
const orderPrompt = (n: number) => `ORDER: ${Array.from({ length: n }, (_, i) => `1 ${ITEMS[i % ITEMS.length]}${i >= ITEMS.length ? i : ''}`).join(', ')}. What do I pay?`;
const price = (item: string) => PRICES[item.replace(/\d+$/, '')] ?? 1;
function toolResult(name: string, args: Record<string, any>): string {
  return name === 'add' ? JSON.stringify({ sum: Math.round((args.numbers as number[]).reduce((a, b) => a + b, 0) * 100) / 100 }) : JSON.stringify({ item: args.item, price: price(String(args.item)) });
}

function instantEngine(format: ChatFormat): ScriptedEngine {
  const cache = new Map<string, number[]>();
  return new ScriptedEngine((r) => {
    const text = format.tokenizer.decode([...r.tokens]);
    const reply = scriptedReply(text);
    const key = JSON.stringify(reply);
    let tokens = cache.get(key);
    if (!tokens) cache.set(key, (tokens = format.renderCompletion(reply)));
    return { tokens, logprobs: tokens.map(() => -0.5) };
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** (a) the agent loop's way: one session, deltas appended, the engine on the ids. Per-call ms (engine included). */
async function inProcessConversation(format: ChatFormat, engine: ScriptedEngine, items: number): Promise<number[]> {
  const session = format.startSession({ messages: [{ role: 'system', content: 'You are a shop assistant.' }, { role: 'user', content: orderPrompt(items) }], tools });
  const times: number[] = [];
  for (let call = 0; call < items + 2; call++) {
    const t0 = performance.now();
    session.appendGenerationPrompt();
    const [r] = await engine.generate([{ tokens: session.tokens, maxNewTokens: 256, temperature: 1, stop: [...format.stopTokenIds] }]);
    const parse = session.appendGenerated(r!.tokens);
    times.push(performance.now() - t0);
    const calls = parse.ok ? parse.toolCalls ?? [] : [];
    if (calls.length === 0) break;
    session.append(...calls.map((c): ChatMessage => ({ role: 'tool', name: c.name, content: toolResult(c.name, c.arguments) })));
  }
  return times;
}

/** (b) through the gateway: the openai package, the whole history each call. Per-call ms, client-side. */
async function gatewayConversation(client: OpenAI, items: number): Promise<number[]> {
  const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'system', content: 'You are a shop assistant.' }, { role: 'user', content: orderPrompt(items) }];
  const times: number[] = [];
  for (let call = 0; call < items + 2; call++) {
    const t0 = performance.now();
    const m = (await client.chat.completions.create({ model: 'policy', messages, tools: tools as OpenAI.ChatCompletionTool[], max_tokens: 256 })).choices[0]!.message;
    times.push(performance.now() - t0);
    messages.push(m as OpenAI.ChatCompletionMessageParam);
    if (!m.tool_calls?.length) break;
    for (const c of m.tool_calls) if (c.type === 'function') messages.push({ role: 'tool', tool_call_id: c.id, content: toolResult(c.function.name, JSON.parse(c.function.arguments)) });
  }
  return times;
}

async function main(): Promise<void> {
  const format = createChatFormat('harmony', loadTokenizer('o200k_harmony'));
  const engine = instantEngine(format);
  const gw = await startGateway({ engine, format, contextLength: 131_072 });

  // 1. Per-call overhead.
  const perCall: { inProcess: number[][]; gateway: number[][] } = { inProcess: [], gateway: [] };
  let rows = 0, splits = 0, renderedShare = 0;
  const cpu = { inProcess: 0, gateway: 0, calls: 0, serverMs: [] as number[] };
  const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;
  for (let rep = 0; rep < REPS + 2; rep++) {
    const c0 = process.cpuUsage();
    const a = await inProcessConversation(format, engine, CALLS);
    const c1 = process.cpuUsage();
    const { id, baseUrl } = gw.openRollout({ seed: rep });
    const b = await gatewayConversation(new OpenAI({ baseURL: baseUrl, apiKey: 'x', maxRetries: 0 }), CALLS);
    const record = await gw.finishRollout(id);
    const c2 = process.cpuUsage();
    if (rep < 2) continue; // warm-up
    cpu.inProcess += cpuMs(process.cpuUsage(c0)) - cpuMs(process.cpuUsage(c1));
    cpu.gateway += cpuMs(process.cpuUsage(c1)) - cpuMs(process.cpuUsage(c2));
    cpu.calls += record.calls.length;
    cpu.serverMs.push(...record.calls.map((c) => c.ms));
    rows += record.rows.length;
    splits += record.splits.length;
    renderedShare += record.calls.reduce((s, c) => s + c.renderedTokens, 0) / record.calls.reduce((s, c) => s + c.promptTokens, 0);
    a.forEach((t, i) => (perCall.inProcess[i] ??= []).push(t));
    b.forEach((t, i) => (perCall.gateway[i] ??= []).push(t));
  }
  const callsPer = perCall.gateway.length;
  const promptTokensLast = (await (async () => {
    const { id, baseUrl } = gw.openRollout({ seed: 99 });
    await gatewayConversation(new OpenAI({ baseURL: baseUrl, apiKey: 'x', maxRetries: 0 }), CALLS);
    return (await gw.finishRollout(id)).calls.map((c) => c.promptTokens);
  })());
  const perCallRows = perCall.gateway.map((g, i) => ({ call: i + 1, promptTokens: promptTokensLast[i], inProcessMs: median(perCall.inProcess[i] ?? [NaN]), gatewayMs: median(g), gatewayMinMs: Math.min(...g) }));
  const allIn = perCall.inProcess.flat(), allGw = perCall.gateway.flat();
  const overhead = {
    inProcessMedianMs: median(allIn), gatewayMedianMs: median(allGw), overheadMedianMs: median(allGw) - median(allIn), inProcessMinMs: Math.min(...allIn), gatewayMinMs: Math.min(...allGw),
    /** CPU time of this process per call: the in-process path; the gateway path (the openai client and the gateway, both in this process). */
    inProcessCpuMsPerCall: cpu.inProcess / cpu.calls, gatewayCpuMsPerCall: cpu.gateway / cpu.calls,
    /** The gateway's own time per call, from the parsed body to the reply (the instant engine included). */
    gatewayHandlerMedianMs: median(cpu.serverMs),
  };

  // 2. Rollouts/s.
  const tasks: ProgramTask[] = JSON.parse(readFileSync(join(ROOT, 'examples/openai-agent/tasks.json'), 'utf8'));
  const throughput: { mode: string; concurrency: number; rollouts: number; seconds: number; rolloutsPerS: number; callsPerS: number; failed: number }[] = [];
  for (const concurrency of [1, 16]) {
    const sampler = new ProgramGroupSampler({ gateway: gw, tasks: new Map(tasks.map((t) => [t.id, t])), concurrency, program: { command: process.execPath, args: [join(ROOT, 'examples/openai-agent/agent.mjs')], timeoutMs: 120_000 } });
    const groups = tasks.map((t, i) => ({ taskId: t.id, uid: `c${concurrency}-${i}` }));
    const n = Math.ceil(ROLLOUTS / tasks.length);
    const t0 = performance.now();
    const out = await sampler.sample({ groups, n, seed: 1, temperature: 1, kind: 'train' });
    const s = (performance.now() - t0) / 1000;
    throughput.push({ mode: 'program processes (node examples/openai-agent/agent.mjs)', concurrency, rollouts: n * tasks.length, seconds: s, rolloutsPerS: (n * tasks.length) / s, callsPerS: out.metrics['programs/calls']! / s, failed: out.metrics['programs/failed']! });
  }
  for (const concurrency of [1, 16]) {
    const t0 = performance.now();
    let calls = 0, next = 0;
    const total = Math.ceil(ROLLOUTS / tasks.length) * tasks.length;
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        const { id, baseUrl } = gw.openRollout();
        const made = (await gatewayConversation(new OpenAI({ baseURL: baseUrl, apiKey: 'x', maxRetries: 0 }), 2)).length;
        calls += made;
        await gw.finishRollout(id);
      }
    }));
    const s = (performance.now() - t0) / 1000;
    throughput.push({ mode: 'in-process async agents (openai package, same 4-call conversation)', concurrency, rollouts: total, seconds: s, rolloutsPerS: total / s, callsPerS: calls / s, failed: 0 });
  }
  await gw.close();

  const machine = { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, node: process.version };
  const command = `nice -n 10 npm run bench:gateway -- --calls ${CALLS} --reps ${REPS} --rollouts ${ROLLOUTS}`;
  const result = { date: new Date().toISOString(), machine, command, callsPerConversation: callsPer, reps: REPS, overhead, perCall: perCallRows, rowsPerConversation: rows / REPS, splits, renderedShare: renderedShare / REPS, throughput };
  const out = join(ROOT, 'bench', 'results');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'gateway.json'), `${JSON.stringify(result, null, 2)}\n`);
  const f = (x: number, d = 2) => x.toFixed(d);
  const pick = [0, 1, Math.floor(callsPer / 2), callsPer - 1].filter((v, i, a) => a.indexOf(v) === i);
  const md = [
    '# Trajectory gateway overhead (bench/gateway.ts)',
    '',
    `${result.date}, Node ${machine.node}, ${machine.cpu} (${machine.cores} cores, shared with other jobs; run under nice). Command: \`${command}\`.`,
    'The engine replays scripted completions instantly (no model), tokenizer o200k_harmony, chat format harmony, so the times are the gateway\'s and the harness\'s own.',
    '',
    `## Per call: the gateway over HTTP vs the in-process rollout path (${callsPer} calls per conversation, median of ${REPS})`,
    '',
    '| call | prompt tokens | in process (session + engine) ms | gateway (openai package over HTTP) ms | gateway, fastest of the runs, ms | overhead (medians) ms |',
    '| --- | --- | --- | --- | --- | --- |',
    ...pick.map((i) => perCallRows[i]!).map((r) => `| ${r.call} | ${r.promptTokens} | ${f(r.inProcessMs, 3)} | ${f(r.gatewayMs)} | ${f(r.gatewayMinMs)} | ${f(r.gatewayMs - r.inProcessMs)} |`),
    `| all calls | | ${f(overhead.inProcessMedianMs, 3)} | ${f(overhead.gatewayMedianMs)} | ${f(overhead.gatewayMinMs)} | ${f(overhead.overheadMedianMs)} |`,
    '',
    '',
    `CPU time per call (this process): in process ${f(overhead.inProcessCpuMsPerCall, 3)} ms; through the gateway ${f(overhead.gatewayCpuMsPerCall)} ms (the \`openai\` client and the gateway together).`,
    `The gateway's own time per call (parsed body to reply, instant engine included): median ${f(overhead.gatewayHandlerMedianMs)} ms.`,
    'The wall-clock medians include waiting for the CPU on a machine shared with other jobs; the fastest run and the CPU times are steadier.',
    '',
    `Every conversation was recorded as ${f(result.rowsPerConversation, 0)} row (${splits} splits); the gateway rendered ${f(100 * result.renderedShare, 1)}% of the prompt ids it sent to the engine and reused the rest from the row.`,
    '',
    '## Rollouts per second',
    '',
    '| programs | concurrent | rollouts | seconds | rollouts/s | model calls/s | failed |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...throughput.map((t) => `| ${t.mode} | ${t.concurrency} | ${t.rollouts} | ${f(t.seconds)} | ${f(t.rolloutsPerS)} | ${f(t.callsPerS, 1)} | ${t.failed} |`),
    '',
    'A program rollout is a Node process start, the `openai` package\'s import, four model calls and the reward POST; on',
    'a real model the model\'s time per call adds to each row, and the gateway\'s part stays the overhead above.',
    '',
  ].join('\n');
  writeFileSync(join(out, 'gateway.md'), md);
  console.log(md);
}

await main();

/**
 * The example agent programs (examples/openai-agent with the `openai` package, examples/ai-sdk-agent with the Vercel
 * AI SDK) run as child processes against the gateway. A random tiny model answers in text and never calls a tool,
 * so a scripted engine plays the policy here (it calls the examples' tools, read off the prompt); the recorded rows
 * are checked id for id. Log-prob exactness with the real tiny model: program-train.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import type { ChatFormat } from '../../src/llm/chat-format.ts';
import { createChatFormat } from '../../src/llm/formats.ts';
import { Qwen3Format } from '../../src/llm/qwen3.ts';
import { qwen3Tokenizer } from '../../src/llm/qwen3-tokenizer.ts';
import type { ScriptedEngine } from '../../src/rollout/inference.ts';
import { ProgramGroupSampler, type ProgramTask } from '../../src/rollout/program-sampler.ts';
import { startGateway, type GatewayHandle } from '../../src/serve/gateway.ts';
import { assertRowsExact, scriptedAgentEngine } from './program-fixtures.ts';

const bpe = BpeTokenizer.train('ORDER: CITY lookup_price add numbers the total is euros weather Fahrenheit\n'.repeat(20), { vocabSize: 400 });
const tasksOf = (example: string): ProgramTask[] => JSON.parse(readFileSync(join('examples', example, 'tasks.json'), 'utf8'));

async function runExample(format: ChatFormat, example: string, env: Record<string, string> = {}) {
  const engine: ScriptedEngine = scriptedAgentEngine(format);
  const gw = await startGateway({ engine, format, contextLength: 8192 });
  try {
    const tasks = tasksOf(example);
    const sampler = new ProgramGroupSampler({ gateway: gw, tasks: new Map(tasks.map((t) => [t.id, t])), concurrency: 4, program: { command: process.execPath, args: [join('examples', example, 'agent.mjs')], env, timeoutMs: 60_000 } });
    const out = await sampler.sample({ groups: tasks.slice(0, 2).map((t, i) => ({ taskId: t.id, uid: `g${i}` })), n: 2, seed: 11, temperature: 1, kind: 'train' });
    for (const o of out.outcomes) assertRowsExact(format, engine, o.record);
    return out;
  } finally {
    await gw.close();
  }
}

describe('example agent programs through the gateway', () => {
  it('examples/openai-agent (openai package): several tool calls, one exact row per rollout, reward 1 posted', async () => {
    const out = await runExample(createChatFormat('harmony', bpe), 'openai-agent');
    assert.equal(out.metrics['programs/failed'], 0, JSON.stringify(out.outcomes.map((o) => o.failure)));
    assert.equal(out.metrics['programs/split_rollouts'], 0);
    assert.equal(out.metrics['programs/reward_source/post'], 4);
    assert.equal(out.groups.length, 2);
    for (const g of out.groups) {
      assert.equal(g.trajectories.length, 2);
      for (const t of g.trajectories) {
        assert.equal(t.reward, 1);
        assert.equal(t.numTurns, 4, 'two price look-ups, the sum, the answer');
        assert.equal(t.toolCalls, 3);
      }
    }
  });

  it('examples/openai-agent streamed (AGENT_STREAM=1) records the same rows', async () => {
    const plain = await runExample(createChatFormat('harmony', bpe), 'openai-agent');
    const streamed = await runExample(createChatFormat('harmony', bpe), 'openai-agent', { AGENT_STREAM: '1' });
    assert.equal(streamed.metrics['programs/split_rollouts'], 0);
    assert.ok(streamed.outcomes.every((o) => o.record.calls.every((c) => c.stream)));
    assert.deepEqual(streamed.groups.map((g) => g.trajectories.map((t) => t.responseIds)), plain.groups.map((g) => g.trajectories.map((t) => t.responseIds)));
  });

  for (const [name, format] of [['harmony', () => createChatFormat('harmony', bpe)], ['qwen3', () => new Qwen3Format(qwen3Tokenizer())]] as const) {
    it(`examples/ai-sdk-agent (AI SDK generateText, ${name}): two tools over three steps, one exact row, reward printed`, async () => {
      const out = await runExample(format(), 'ai-sdk-agent');
      assert.equal(out.metrics['programs/failed'], 0, JSON.stringify(out.outcomes.map((o) => o.failure)));
      assert.equal(out.metrics['programs/split_rollouts'], 0, 'the AI SDK sends reasoning_content back, so nothing splits');
      assert.equal(out.metrics['programs/reward_source/stdout'], 4);
      for (const t of out.groups.flatMap((g) => g.trajectories)) {
        assert.equal(t.reward, 1);
        assert.equal(t.numTurns, 3);
        assert.equal(t.toolCalls, 2);
      }
    });
  }
});

describe('failed program rollouts', () => {
  const format = createChatFormat('harmony', bpe);
  let gw: GatewayHandle;
  let dir: string;
  before(async () => {
    gw = await startGateway({ engine: scriptedAgentEngine(format), format, contextLength: 8192 });
    dir = mkdtempSync(join(tmpdir(), 'longrun-programs-'));
  });
  after(async () => {
    await gw.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('are left out of their groups, counted by kind and written with their stderr; the rest train', async () => {
    const failuresFile = join(dir, 'failures.jsonl');
    // One program, four behaviours picked by the task: works, crashes after a call, never calls the model, gives no reward.
    const code = [
      `const t=JSON.parse(require('fs').readFileSync(0,'utf8'));`,
      `const call=()=>fetch(process.env.OPENAI_BASE_URL+'/chat/completions',{method:'POST',headers:{'content-type':'application/json'},body:JSON.stringify({messages:[{role:'user',content:'ORDER: 1 apple.'}]})}).then(r=>r.json());`,
      `(async()=>{`,
      `if(t.mode==='silent'){console.log(JSON.stringify({reward:1}));return;}`,
      `await call();`,
      `if(t.mode==='crash'){console.error('the tool server died');process.exit(2);}`,
      `if(t.mode==='slow'){await new Promise(r=>setTimeout(r,60000));}`,
      `if(t.mode==='ok')console.log(JSON.stringify({reward:0.5}));`,
      `})();`,
    ].join('');
    const tasks = ['ok', 'crash', 'silent', 'noreward', 'slow'].map((mode) => ({ id: mode, mode }));
    const lines: string[] = [];
    const sampler = new ProgramGroupSampler({ gateway: gw, tasks: new Map(tasks.map((t) => [t.id, t])), failuresFile, log: (l) => lines.push(l), program: { command: process.execPath, args: ['-e', code], timeoutMs: 6000 } });
    const out = await sampler.sample({ groups: tasks.map((t) => ({ taskId: t.id, uid: t.id })), n: 1, seed: 1, temperature: 1, kind: 'train' });
    // Failed rollouts come back as env_error episodes (no ids), which the trainer leaves out, counts and records.
    const trainable = out.groups.filter((g) => g.trajectories.some((t) => t.terminationReason !== 'env_error'));
    assert.deepEqual(trainable.map((g) => g.taskId), ['ok']);
    assert.equal(trainable[0]!.trajectories[0]!.reward, 0.5);
    const errors = out.groups.flatMap((g) => g.trajectories).filter((t) => t.terminationReason === 'env_error');
    assert.equal(errors.length, 4);
    assert.ok(errors.every((t) => t.responseIds.length === 0 && t.promptIds.length === 0));
    assert.match(errors.find((t) => t.taskId === 'crash')!.envError!, /crashed: the program exited with status 2; stderr ends: the tool server died/);
    assert.equal(out.metrics['programs/failed'], 4, JSON.stringify(out.metrics));
    for (const k of ['crashed', 'no_model_calls', 'no_reward', 'timeout']) assert.equal(out.metrics[`programs/failed/${k}`], 1, k);
    const rows = readFileSync(failuresFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(rows.map((r) => r.failure).sort(), ['crashed', 'no_model_calls', 'no_reward', 'timeout']);
    assert.ok(rows.every((r) => r.termination === 'env_error'));
    assert.match(rows.find((r) => r.failure === 'crashed').stderrTail, /the tool server died/);
    assert.equal(lines.length, 4);
    // A step whose every rollout fails is the trainer's to skip (no update), not a thrown error here.
    const all = await sampler.sample({ groups: [{ taskId: 'crash', uid: 'c' }], n: 2, seed: 1, temperature: 1, kind: 'train' });
    assert.deepEqual(all.groups[0]!.trajectories.map((t) => t.terminationReason), ['env_error', 'env_error']);
  });
});

/**
 * The retail env's AgentLoop with the qwen3 chat format and the Qwen3 tokenizer. First the rule-based expert plays
 * through the loop as a "model" that writes Qwen3 tokens (each of its turns rendered as the completion a Qwen3 model
 * would sample), so every tool call goes text → tokens → parser → env and the episodes must still score reward 1.
 * Then a tiny random gpt-oss with the Qwen3 vocabulary, built from a run file that selects `format: qwen3`, samples
 * real garbage: only the format is under test, and every request must extend the previous one token for token.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { RetailDb } from '../../src/domains/retail/db.ts';
import { makeSynthRetailEnv } from '../../src/domains/retail/synth/env.ts';
import { ExpertAgent } from '../../src/domains/retail/synth/expert.ts';
import type { AgentSession } from '../../src/domains/retail/synth/agent.ts';
import { generateTaskSet, readTaskSet, writeTaskSet, type LoadedSynthTaskSet } from '../../src/domains/retail/synth/taskset.ts';
import type { ChatMessage } from '../../src/llm/messages.ts';
import { Qwen3Format } from '../../src/llm/qwen3.ts';
import { qwen3Tokenizer } from '../../src/llm/qwen3-tokenizer.ts';
import { COMPACT_RETAIL_POLICY } from '../../src/recipes/retail/prepare.ts';
import { buildRun, parseRunFile } from '../../src/recipes/train-setup.ts';
import { AgentLoop, type AgentEnv } from '../../src/rollout/agent-loop.ts';
import { ScriptedEngine, type GenerationRequest, type GenerationResult, type InferenceEngine } from '../../src/rollout/inference.ts';
import type { Message } from '../../src/tooluse/messages.ts';
import type { AgentTurn } from '../../src/tooluse/orchestrator.ts';
import type { ToolUseEnv } from '../../src/tooluse/env.ts';
import { GREETING } from '../../src/tooluse/orchestrator.ts';

/** Every request extends the previous request and what was sampled for it, token for token. */
function assertPrefixChain(requests: readonly { tokens: readonly number[] }[], sampled: readonly (readonly number[])[]): void {
  for (let k = 1; k < requests.length; k++) {
    const before = [...requests[k - 1].tokens, ...sampled[k - 1]];
    assert.ok(requests[k].tokens.length > before.length, `request ${k} adds an observation`);
    assert.deepEqual(requests[k].tokens.slice(0, before.length), before, `request ${k} extends request ${k - 1} and its sample`);
  }
}

/** The retail env, with the expert shown what the agent loop is shown, so it can play the next turn. */
class ExpertDrivenEnv implements AgentEnv {
  private session: AgentSession | undefined;
  private observed: Message[] = [];
  readonly sent: AgentTurn[] = [];
  readonly intended: AgentTurn[] = [];

  constructor(private readonly env: ToolUseEnv<RetailDb>) {}

  async reset(options?: Parameters<AgentEnv['reset']>[0]) {
    const out = await this.env.reset(options);
    this.session = new ExpertAgent().start({ task: this.env.currentTask!, tools: this.env.tools, seed: options?.seed ?? 0 });
    this.observed = out[0].messages;
    return out;
  }

  async step(action: AgentTurn) {
    this.sent.push(action);
    const out = await this.env.step(action);
    this.observed = out[0].messages;
    return out;
  }

  /** The expert's next turn, as the assistant message a model would write. */
  next(): ChatMessage {
    const turn = this.session!.act(this.observed);
    this.intended.push(turn);
    return { role: 'assistant', content: turn.content ?? '', ...(turn.toolCalls && { toolCalls: turn.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments as Record<string, unknown> })) }) };
  }
}

/** An engine that records what it was asked and what it returned. */
class Recording implements InferenceEngine {
  readonly requests: GenerationRequest[] = [];
  readonly sampled: number[][] = [];
  constructor(private readonly inner: InferenceEngine) {}
  async generate(requests: readonly GenerationRequest[]): Promise<GenerationResult[]> {
    const out = await this.inner.generate(requests);
    this.requests.push(...requests);
    this.sampled.push(...out.map((o) => o.tokens));
    return out;
  }
  endSession(id: string): void {
    this.inner.endSession?.(id);
  }
  async close(): Promise<void> {
    await this.inner.close?.();
  }
}

describe('retail AgentLoop with the qwen3 format', () => {
  let dir: string;
  let set: LoadedSynthTaskSet;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-qwen3-'));
    writeTaskSet(join(dir, 'train'), generateTaskSet({ worldSeed: 31, taskSeed: 32, count: 6, sizes: { products: 20, users: 30, orders: 60 }, difficulty: [1, 2], split: 'train' }), COMPACT_RETAIL_POLICY);
    set = readTaskSet(join(dir, 'train'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("the expert writing Qwen3 tokens solves every task: its tool calls parse back into exactly the actions it meant", async () => {
    const format = new Qwen3Format(qwen3Tokenizer());
    const retail = makeSynthRetailEnv(set);
    const env = new ExpertDrivenEnv(retail);
    const sampled: number[][] = [];
    const engine = new ScriptedEngine(() => {
      const tokens = format.renderCompletion(env.next());
      sampled.push(tokens);
      return { tokens };
    });
    const loop = new AgentLoop({ format, engine, sampling: { temperature: 1 }, maxTurns: 60, maxResponseTokens: 60_000, greeting: GREETING });
    let toolCalls = 0;
    for (const task of set.tasks) {
      const first = engine.requests.length;
      const t = await loop.run(env, { seed: 5, taskId: task.id });
      assert.equal(t.reward, 1, `${task.id} (${task.longrun.family}): ${t.terminationReason}`);
      assert.equal(t.parseErrors, 0);
      assert.equal(t.terminationReason, 'env_terminated');
      toolCalls += t.toolCalls;
      // The token sequence is the whole conversation rendered at once; the mask covers exactly the sampled turns.
      assert.deepEqual([...t.promptIds, ...t.responseIds], format.render({ messages: t.messages, tools: retail.tools }));
      assert.deepEqual(t.responseIds.filter((_, i) => t.responseMask[i] === 1), sampled.slice(first).flat());
      assertPrefixChain(engine.requests.slice(first), sampled.slice(first));
      assert.ok(t.promptIds.includes(format.tokenizer.specialId('<tool_call>')), 'the tools prompt has the tag token');
    }
    assert.ok(toolCalls >= set.tasks.length, `the expert called tools (${toolCalls})`);
    // What reached the env is what the expert meant (call ids are the loop's own).
    assert.equal(env.sent.length, env.intended.length);
    env.sent.forEach((sent, i) => {
      const meant = env.intended[i];
      assert.equal(sent.content ?? null, meant.content?.trim() || null);
      assert.deepEqual(sent.toolCalls?.map((c) => [c.name, c.arguments]) ?? null, meant.toolCalls?.map((c) => [c.name, c.arguments]) ?? null);
    });
  });

  it('a tiny random model from a run file with policy.format qwen3: requests extend each other, sampled tokens kept verbatim', async () => {
    const { run, trainer } = parseRunFile({
      task: 'retail-synth',
      retail: { tasks: { dataDir: join(dir, 'train'), tools: 'compact' } },
      policy: { type: 'gpt-oss', preset: 'tiny-1m', modelConfig: { max_position_embeddings: 4096 }, tokenizer: 'qwen3', format: 'qwen3', seed: 4 },
      engine: { type: 'in-process', batching: 'step', maxBatchSize: 4 },
      grpo: { data: { trainBatchSize: 1 }, rollout: { n: 2, temperature: 1, maxTurns: 3, maxResponseTokens: 1024, maxTokensPerTurn: 12 }, trainer: { totalSteps: 1 } },
    });
    const built = await buildRun(run);
    try {
      const format = built.deps.format;
      assert.equal(format.name, 'qwen3');
      assert.equal(built.tokenizer.vocabSize, 151936);
      assert.equal(built.model!.config.vocab_size, 151936);
      const engine = new Recording(built.deps.engine);
      const r = trainer.rollout;
      const loop = new AgentLoop({ format, engine, sampling: { temperature: 1 }, maxTurns: r.maxTurns, maxResponseTokens: r.maxResponseTokens, maxTokensPerTurn: r.maxTokensPerTurn, ...built.deps.loop });
      const env = built.deps.makeEnv();
      for (const [i, taskId] of built.deps.trainTasks.slice(0, 2).entries()) {
        const first = engine.requests.length;
        const t = await loop.run(env, { seed: 11 + i, taskId });
        const requests = engine.requests.slice(first);
        const sampled = engine.sampled.slice(first);
        assert.ok(t.numTurns >= 1 && requests.length === t.numTurns);
        assert.deepEqual(requests[0].tokens, t.promptIds);
        assert.deepEqual(requests[0].stop, format.stopTokenIds);
        assert.deepEqual(t.promptIds.slice(-6), format.tokenizer.encode('<|im_start|>assistant\n<think>\n\n</think>\n\n', { allowedSpecial: 'all' }).slice(-6), 'the non-thinking generation prompt');
        assertPrefixChain(requests, sampled);
        assert.deepEqual(t.responseIds.filter((_, j) => t.responseMask[j] === 1), sampled.flat(), 'sampled tokens are kept verbatim, in order');
        assert.ok(t.rolloutLogprobs.every((lp, j) => (t.responseMask[j] === 1 ? Number.isFinite(lp) && lp <= 0 : lp === 0)));
        assert.ok(sampled.flat().every((id) => Number.isInteger(id) && id >= 0 && id < 151936));
      }
      await env.close?.();
    } finally {
      await built.close?.();
      await built.deps.engine.close?.();
      built.model?.dispose();
    }
  });
});

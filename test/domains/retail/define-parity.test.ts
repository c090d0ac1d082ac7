/**
 * Parity of the retail domain on the environment API with τ²'s reference loop. The same agents play the reference
 * env (`OrchestratorEnv`, the τ² orchestrator), the retail definition's own env (`defineRetailEnv(...).makeEnv()`, a
 * `DefinedToolEnv`) and the registered env (`make('longrun/retail-v*')`, a `ToolUseEnv` over the definition); every
 * observation, reward, termination flag, info field (τ²'s `RewardInfo` included), thrown error and the whole message
 * list (roles, texts, tool calls with ids and arguments, tool results, error flags) must be the same:
 * - the gold actions of every task of τ² v0 and v1 (split base), then `done` or a closing text;
 * - seeded draws of tasks from the train and test splits;
 * - a seeded garbage agent (unknown tools, arguments of the wrong type, malformed or missing arguments, text with
 *   calls, empty turns, `done` among other calls, stop tokens, string actions) under tight step and error limits,
 *   with and without τ²'s communication protocol, against the ticket user and a scripted user that sends empty
 *   messages;
 * - the synthetic expert (perfect, with mistakes, and with slipped calls) and the random agent on generated tasks
 *   with the scripted customer, and the synthetic definition's demonstrator through `demonstrationEpisodes`;
 * - through the agent loop (token in, token out, harmony format): the expert writing tokens on synthetic tasks, and a
 *   tiny random model sampling on τ² tasks (same weights, same seeds): the same trajectories, token for token, with
 *   the same log-probs, rewards and reward info.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import type { Env } from '../../../src/gym/env.ts';
import { BpeTokenizer } from '../../../src/llm/bpe.ts';
import { createChatFormat } from '../../../src/llm/formats.ts';
import type { ChatMessage } from '../../../src/llm/messages.ts';
import { presetConfig } from '../../../src/model/config.ts';
import { GptOssModel } from '../../../src/model/model.ts';
import { AgentLoop, type AgentEnv } from '../../../src/rollout/agent-loop.ts';
import { ScriptedEngine } from '../../../src/rollout/inference.ts';
import { createModelEngine } from '../../../src/rollout/model-engine.ts';
import { makeSynthRetailEnv } from '../../../src/domains/retail/synth/env.ts';
import type { Info } from '../../../src/gym/types.ts';
import { make } from '../../../src/gym/registry/registry.ts';
import { demonstrationEpisodes } from '../../../src/tooluse/api/demonstrations.ts';
import { defineRetailEnv, defineSynthRetailEnv, resolveRetailJudge } from '../../../src/domains/retail/define.ts';
import { createRetailDomain } from '../../../src/domains/retail/domain.ts';
import { loadRetailTaskSet, RETAIL_ENV_IDS, registerRetailEnvs } from '../../../src/domains/retail/register.ts';
import type { AgentSession, SynthAgent } from '../../../src/domains/retail/synth/agent.ts';
import { ExpertAgent } from '../../../src/domains/retail/synth/expert.ts';
import { RandomAgent } from '../../../src/domains/retail/synth/random-agent.ts';
import { RecoveringAgent } from '../../../src/domains/retail/synth/recovery.ts';
import { SynthRng } from '../../../src/domains/retail/synth/rng.ts';
import { generateTasks, type SynthTask } from '../../../src/domains/retail/synth/task-gen.ts';
import type { LoadedSynthTaskSet } from '../../../src/domains/retail/synth/taskset.ts';
import { ScriptedRetailUser } from '../../../src/domains/retail/synth/user-sim.ts';
import { generateWorld } from '../../../src/domains/retail/synth/world.ts';
import type { RetailToolSet } from '../../../src/domains/retail/tools.ts';
import { ToolUseEnv } from '../../../src/tooluse/env.ts';
import type { Judge } from '../../../src/tooluse/evaluator.ts';
import type { Message } from '../../../src/tooluse/messages.ts';
import { toFunctionalFormat } from '../../../src/tooluse/messages.ts';
import { OrchestratorEnv } from '../../../src/tooluse/orchestrator-env.ts';
import { TAU2_GREETING, type AgentToolCall, type AgentTurn } from '../../../src/tooluse/orchestrator.ts';
import type { ToolUseAction, ToolUseObservation } from '../../../src/tooluse/spaces.ts';
import type { Task } from '../../../src/tooluse/tasks.ts';
import type { ToolSchema } from '../../../src/tooluse/types.ts';
import { ScriptedUser, STOP_TOKEN, TicketUser, TRANSFER_MESSAGE, type UserSimulator } from '../../../src/tooluse/user.ts';
import { TAU2_RETAIL_DIR } from '../../helpers/paths.ts';

registerRetailEnvs();

type AnyEnv = Env<ToolUseObservation, ToolUseAction, string> & { readonly messages: readonly Message[] };

/** Everything an env showed while a script played: reset, each step (or the error it threw), and the final messages. */
interface Transcript {
  events: unknown[];
  messages: Message[];
  rewards: number[];
  reasons: unknown[];
}

/** The info fields τ²'s gym reports (the raw DefinedToolEnv has a few more of its own: episodeId, turns). */
const INFO_KEYS = ['taskId', 'tools', 'systemPrompt', 'stepCount', 'numErrors', 'terminationReason', 'rewardInfo'] as const;
const pickInfo = (info: Info) => Object.fromEntries(INFO_KEYS.map((k) => [k, info[k]]));

/**
 * Plays an episode. `next(observed)` gives the agent's next action from what it observed (null: stop sending). A
 * refused turn is recorded (`{ threw: 'refused' }`) and the episode goes on, as τ²'s gym lets it; any other error is
 * recorded and ends the play.
 */
async function play(env: AnyEnv, seed: number, taskId: string | undefined, next: (observed: readonly Message[], i: number) => ToolUseAction | null, maxActions = 60): Promise<Transcript> {
  const t: Transcript = { events: [], messages: [], rewards: [], reasons: [] };
  let observed: readonly Message[] = [];
  let ended: boolean;
  try {
    const [obs, info] = await env.reset({ seed, options: taskId === undefined ? null : { taskId } });
    t.events.push({ reset: obs, info: pickInfo(info) });
    observed = obs.messages;
    ended = info.terminationReason !== null;
    if (ended) t.reasons.push(info.terminationReason);
  } catch (e) {
    t.events.push({ resetThrew: (e as Error).message.includes('needs text') || (e as Error).message.includes('empty message') ? 'refused' : 'error' });
    ended = true;
  }
  for (let i = 0; !ended && i < maxActions; i++) {
    const action = next(observed, i);
    if (action === null) break;
    try {
      const [obs, reward, terminated, truncated, info] = await env.step(action);
      t.events.push({ obs, reward, terminated, truncated, info: pickInfo(info) });
      observed = obs.messages;
      if (terminated || truncated) {
        ended = true;
        t.rewards.push(reward);
        t.reasons.push(info.terminationReason);
      }
    } catch (e) {
      // A refused turn (an empty one, without the protocol) leaves the episode open in τ²'s gym; any other failure
      // (the user simulator's) ends it here: the defined env ends it as an env error, the reference would go on
      // in a broken state.
      const refused = (e as Error).message.startsWith('An agent turn needs text');
      t.events.push({ threw: refused ? 'refused' : 'error' });
      if (!refused) break;
      observed = [];
    }
  }
  t.messages = [...env.messages];
  return t;
}

/** The path of the first difference between two values (for a readable failure), or null. */
function firstDifference(a: unknown, b: unknown, path = '$'): string | null {
  if (isDeepStrictEqual(a, b)) return null;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return `${path}: ${JSON.stringify(a)?.slice(0, 300)} vs ${JSON.stringify(b)?.slice(0, 300)}`;
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const d = firstDifference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${path}.${k}`);
    if (d) return d;
  }
  return `${path}: ${Object.keys(a).join(',')} vs ${Object.keys(b).join(',')}`;
}

/** Deep equality, and the same JSON text: key order counts where it is printed (tool schemas in prompts, reward info in files). */
function assertSame(got: unknown, want: unknown, message: string): void {
  const d = firstDifference(got, want);
  if (d !== null) assert.fail(`${message}; first difference (got vs reference) at ${d}`);
  assert.deepEqual(got, want, message);
  assert.equal(JSON.stringify(got), JSON.stringify(want), `${message} (JSON text)`);
}

type Script = (observed: readonly Message[], i: number) => ToolUseAction | null;

/** Plays the same script (a fresh one from `makeScript` for each env) on each env and asserts identical transcripts; returns the reference's. */
async function samePlay(label: string, envs: readonly AnyEnv[], seed: number, taskId: string | undefined, makeScript: () => Script): Promise<Transcript> {
  const [ref, ...others] = envs;
  const want = await play(ref!, seed, taskId, makeScript());
  for (const env of others) {
    const got = await play(env, seed, taskId, makeScript());
    assertSame(got, want, `${label}: ${env.constructor.name} differs from the reference loop`);
  }
  return want;
}

const retail = {
  v0: loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v0' }),
  v1: loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v1' }),
};

interface RetailVariant {
  version: RetailToolSet;
  user?: UserSimulator;
  judge?: Judge;
  maxSteps?: number;
  maxErrors?: number;
  enforceCommunicationProtocol?: boolean;
}

/** The reference, the definition's env and the registered env, with the same options, over the base split. */
function retailEnvs(v: RetailVariant): AnyEnv[] {
  const { domain, allTasks } = retail[v.version];
  const judge = v.judge ?? (v.version === 'v1' ? resolveRetailJudge('v1', 'communicate-fallback', allTasks) : undefined);
  const opts = { user: v.user, judge, maxSteps: v.maxSteps, maxErrors: v.maxErrors, enforceCommunicationProtocol: v.enforceCommunicationProtocol };
  const ref = new OrchestratorEnv({ domain, tasks: allTasks, user: v.user ?? new TicketUser(), judge, maxSteps: v.maxSteps, maxErrors: v.maxErrors, enforceCommunicationProtocol: v.enforceCommunicationProtocol });
  const defined = defineRetailEnv(v.version, { dataDir: TAU2_RETAIL_DIR, ...opts }).makeEnv({ split: 'base' });
  const registered = make<ToolUseObservation, ToolUseAction>(RETAIL_ENV_IDS[v.version], { dataDir: TAU2_RETAIL_DIR, ...opts, judge: judge ?? 'none' }).unwrapped as ToolUseEnv;
  return [ref, defined as unknown as AnyEnv, registered];
}

/** The gold actions, then `done` (even tasks) or a text that says the communicate_info (odd tasks, the user stops). */
function goldScript(task: Task, index: number): Script {
  const actions = task.evaluation_criteria?.actions ?? [];
  const say = task.evaluation_criteria?.communicate_info ?? [];
  return (_observed, i) => {
    if (i < actions.length) {
      const a = actions[i]!;
      return i % 2 === 0 ? { toolCalls: [{ name: a.name, arguments: a.arguments }] } : toFunctionalFormat(a);
    }
    if (i === actions.length) return index % 2 === 0 ? 'done()' : `Here is what I found: ${say.join(', ') || 'all set'}.`;
    return null;
  };
}

describe('the retail definition plays as τ²’s loop', () => {
  for (const version of ['v0', 'v1'] as const) {
    it(`replays the gold actions of every ${version} task with the same messages, rewards and reward info`, async () => {
      const envs = retailEnvs({ version });
      const tasks = retail[version].allTasks;
      let ones = 0;
      for (const [i, task] of tasks.entries()) {
        const t = await samePlay(`${version} task ${task.id}`, envs, i, task.id, () => goldScript(task, i));
        assert.equal(t.rewards.length, 1, `${version} task ${task.id} ended`);
        if (t.rewards[0] === 1) ones++;
      }
      assert.equal(tasks.length, 114);
      // Not every gold replay scores 1 (some tasks' gold also expects texts the script does not say), but most do.
      assert.ok(ones > tasks.length / 2, `${version}: ${ones}/${tasks.length} gold replays scored 1`);
    });
  }

  it('draws the same tasks by seed from the train and test splits', async () => {
    for (const version of ['v0', 'v1'] as const) {
      for (const split of ['train', 'test']) {
        const { domain, tasks, allTasks } = loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version, split });
        const judge = resolveRetailJudge(version, 'communicate-fallback', allTasks);
        const ref = new OrchestratorEnv({ domain, tasks, user: new TicketUser(), judge });
        const defined = defineRetailEnv(version, { dataDir: TAU2_RETAIL_DIR, judge }).makeEnv({ split });
        const registered = make<ToolUseObservation, ToolUseAction>(RETAIL_ENV_IDS[version], { dataDir: TAU2_RETAIL_DIR, split, judge }).unwrapped as ToolUseEnv;
        const envs = [ref, defined as unknown as AnyEnv, registered];
        const seen = new Set<unknown>();
        for (let seed = 0; seed < 12; seed++) {
          const t = await samePlay(`${version}/${split} seed ${seed}`, envs, seed, undefined, () => (_o, i) => (i === 0 ? 'Could you help me?' : i === 1 ? 'done()' : null));
          seen.add((t.events[0] as { info: { taskId: unknown } }).info.taskId);
        }
        assert.ok(seen.size > 6, `${version}/${split}: seeds draw different tasks`);
        // A run of resets without seeds continues the env's generator the same way.
        const ids = await Promise.all(envs.map(async (env) => {
          await env.reset({ seed: 99 });
          const out: unknown[] = [];
          for (let k = 0; k < 5; k++) out.push((await env.reset())[1].taskId);
          return out;
        }));
        assert.deepEqual(ids[1], ids[0]);
        assert.deepEqual(ids[2], ids[0]);
      }
    }
  });

  it('a seeded garbage agent: tool errors, malformed arguments, protocol errors and limits end alike', async () => {
    const reasons = new Map<unknown, number>();
    let refused = 0;
    let episodes = 0;
    const empties = (task: Task) => (Number(task.id) % 3 === 0 ? ['', 'hi'] : ['I need help with an order.', '', 'yes', '   ', STOP_TOKEN]);
    for (const version of ['v0', 'v1'] as const) {
      const tools = retail[version].domain.tools;
      for (const enforceCommunicationProtocol of [false, true]) {
        for (const [maxSteps, maxErrors] of [[100, 10], [12, 3], [5, 2]] as const) {
          for (const userKind of ['ticket', 'scripted'] as const) {
            const user = userKind === 'ticket' ? new TicketUser({ maxConfirmations: 3 }) : new ScriptedUser(empties);
            const envs = retailEnvs({ version, user, maxSteps, maxErrors, enforceCommunicationProtocol });
            for (let k = 0; k < 3; k++) {
              const seed = episodes * 7 + 1;
              const rng = new SynthRng(seed);
              const task = rng.pick(retail[version].allTasks);
              const t = await samePlay(`garbage ${version} enforce=${enforceCommunicationProtocol} limits=${maxSteps}/${maxErrors} ${userKind} task ${task.id}`, envs, seed, task.id, () => garbageScript(seed, task, tools.map((x) => x.schema)));
              episodes++;
              for (const r of t.reasons) reasons.set(r, (reasons.get(r) ?? 0) + 1);
              refused += t.events.filter((e) => (e as { threw?: string }).threw === 'refused').length;
            }
          }
        }
      }
    }
    assert.equal(episodes, 72);
    // The script reaches every way an episode can end, and some turns are refused (empty, without the protocol).
    for (const r of ['agent_stop', 'user_stop', 'max_steps', 'too_many_errors', 'agent_error', 'user_error']) assert.ok((reasons.get(r) ?? 0) > 0, `no episode ended ${r}: ${JSON.stringify([...reasons])}`);
    assert.ok(refused > 0, 'some empty turns were refused');
  });

  it('the synthetic expert, its imperfect variants and the random agent, on 300 generated tasks with the scripted customer', async () => {
    const world = generateWorld(5, { products: 30, users: 120, orders: 240 });
    const domain = createRetailDomain({ db: world, policy: retail.v1.domain.policy });
    const tasks = generateTasks(world, 21, { count: 300, difficulty: [1, 4] }).tasks;
    const set: LoadedSynthTaskSet = { dir: '(memory)', domain, world, tasks, scenarios: new Map(tasks.map((t) => [t.id, t.longrun])), meta: null };
    const ref = new OrchestratorEnv({ domain, tasks, user: new ScriptedRetailUser(set.scenarios), maxSteps: 200 });
    const def = defineSynthRetailEnv(set);
    const defined = def.makeEnv();
    const agents: SynthAgent[] = [
      new ExpertAgent(),
      new ExpertAgent({ mistakes: { rate: 0.3 } }),
      new RecoveringAgent(new ExpertAgent(), { rate: 0.3 }),
      new RandomAgent(),
    ];
    let solved = 0;
    for (const [i, task] of tasks.entries()) {
      const agent = agents[i < 200 ? 0 : 1 + (i % 3)]!;
      const seed = 1000 + i;
      const script = (envTools: readonly ToolSchema[]) => {
        const session = agent.start({ task, tools: envTools, seed });
        return (observed: readonly Message[]) => session.act(observed);
      };
      const want = await play(ref, seed, task.id, script(ref.tools), 120);
      const got = await play(defined as unknown as AnyEnv, seed, task.id, script(def.toolSpecs() as ToolSchema[]), 120);
      assertSame(got, want, `synthetic task ${task.id} (${task.longrun.family}) with ${agent.name}`);
      if (i < 200 && want.rewards[0] === 1) solved++;
    }
    assert.ok(solved >= 195, `the perfect expert solved ${solved}/200`);
    // The definition's demonstrator (the expert, interactive) gives the reference's episodes through demonstrationEpisodes.
    const few = tasks.slice(0, 20) as SynthTask[];
    const demoDef = defineSynthRetailEnv({ ...set, tasks: few });
    const records = await demonstrationEpisodes(demoDef, 'train', 1, { seed: 50 });
    assert.equal(records.length, 20);
    for (const [i, r] of records.entries()) {
      const expert = new ExpertAgent();
      const session = expert.start({ task: few[i]!, tools: ref.tools, seed: 50 + i });
      const want = await play(ref, 50 + i, few[i]!.id, (observed) => session.act(observed), 120);
      assert.deepEqual(r.messages, want.messages, `demonstration of ${r.taskId}`);
      assert.equal(r.reward, want.rewards[0]);
      assert.equal(r.family, few[i]!.longrun.family);
    }
  });
});

/** A seeded agent that sends garbage of every kind, mixed with valid calls (from the task's gold actions) and text. */
function garbageScript(seed: number, task: Task, tools: readonly ToolSchema[]): Script {
  const rng = new SynthRng(seed * 31 + 7);
  const gold = task.evaluation_criteria?.actions ?? [];
  const names = tools.map((t) => t.function.name);
  const validArgs = (): { name: string; arguments: Record<string, unknown> } => {
    if (gold.length && rng.chance(0.7)) {
      const a = rng.pick(gold);
      return { name: a.name, arguments: { ...a.arguments } };
    }
    return { name: rng.pick(['get_user_details', 'get_order_details', 'find_user_id_by_email', 'list_all_product_types', 'calculate']), arguments: rng.pick([{ user_id: 'noah_brown_6181' }, { order_id: '#W2378156' }, { email: 'x@y.z' }, {}, { expression: '2 + 3 * 4' }]) };
  };
  const oneCall = (): AgentToolCall => {
    const base = validArgs();
    const call: AgentToolCall = { name: base.name, arguments: base.arguments };
    switch (rng.int(0, 13)) {
      case 0: call.name = `nope_${rng.int(0, 9)}`; break;
      case 1: call.name = rng.pick(names); break; // arguments of another tool
      case 2: call.arguments = JSON.stringify(base.arguments); break; // OpenAI's wire format
      case 3: call.arguments = '{not json'; break;
      case 4: call.arguments = [1, 2]; break;
      case 5: call.arguments = 7; break;
      case 6: call.arguments = null; break;
      case 7: delete (call as { arguments?: unknown }).arguments; break;
      case 8: call.arguments = {}; break;
      case 9: call.arguments = { ...base.arguments, bogus: true }; break;
      case 10: {
        const k = Object.keys(base.arguments)[0];
        call.arguments = k === undefined ? { x: 1 } : { ...base.arguments, [k]: rng.pick([42, null, ['a'], { a: 1 }, true]) };
        break;
      }
      default: break; // a valid call
    }
    if (rng.chance(0.2)) call.id = rng.chance(0.5) ? 'dup' : `id_${rng.int(0, 99)}`;
    return call;
  };
  const text = (): string => rng.pick([
    'Could you confirm your email?',
    'Your order is on its way.',
    `${TRANSFER_MESSAGE}`,
    `All done. ${STOP_TOKEN}`,
    'Let me check that for you... is that right?',
    'ok',
  ]);
  return (_observed, i) => {
    if (i >= 40) return null;
    const turn: AgentTurn = {};
    switch (rng.int(0, 11)) {
      case 0: return text();
      case 1: return toFunctionalFormat(validArgs());
      case 2: return JSON.stringify({ name: rng.pick(names), arguments: validArgs().arguments });
      case 3: return rng.chance(0.5) ? 'done()' : { toolCalls: [oneCall(), { name: 'done', arguments: {} }] };
      case 4: return rng.pick([{ content: '' }, { content: '   ', toolCalls: [] }, {}]);
      case 5: turn.content = text(); turn.toolCalls = [oneCall()]; break;
      case 6: turn.toolCalls = Array.from({ length: rng.int(2, 3) }, oneCall); break;
      default: turn.toolCalls = [oneCall()]; break;
    }
    if (rng.chance(0.2)) turn.reasoning = 'thinking it over';
    return turn;
  };
}

/** An env driven by an agent that sees what the agent loop's model is shown, so it can write the model's next turn. */
class AgentDrivenEnv implements AgentEnv {
  private session: AgentSession | undefined;
  private observed: readonly Message[] = [];

  constructor(private readonly env: AnyEnv & { readonly tools: ToolSchema[]; readonly currentTask: Task | null }, private readonly agent: SynthAgent) {}

  async reset(options?: Parameters<AgentEnv['reset']>[0]) {
    const out = await this.env.reset(options);
    this.session = this.agent.start({ task: this.env.currentTask!, tools: this.env.tools, seed: options?.seed ?? 0 });
    this.observed = out[0].messages;
    return out;
  }

  async step(action: AgentTurn) {
    const out = await this.env.step(action);
    this.observed = out[0].messages;
    return out;
  }

  /** The agent's next turn as the assistant message a model would write. */
  next(): ChatMessage {
    const turn = this.session!.act(this.observed);
    return { role: 'assistant', content: turn.content ?? '', ...(turn.toolCalls && { toolCalls: turn.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments as Record<string, unknown> })) }) };
  }
}

describe('the retail definition through the agent loop', () => {
  const bpe = BpeTokenizer.train(retail.v1.domain.policy.slice(0, 4000), { vocabSize: 400 });
  const format = createChatFormat('harmony', bpe);

  it('the synthetic expert writing harmony tokens: the same trajectories, token for token', async () => {
    const world = generateWorld(8, { products: 20, users: 40, orders: 80 });
    const domain = createRetailDomain({ db: world, policy: retail.v1.domain.policy });
    const tasks = generateTasks(world, 9, { count: 12, difficulty: [1, 3] }).tasks;
    const set: LoadedSynthTaskSet = { dir: '(memory)', domain, world, tasks, scenarios: new Map(tasks.map((t) => [t.id, t.longrun])), meta: null };
    const runs = [];
    for (const env of [new OrchestratorEnv({ domain, tasks, user: new ScriptedRetailUser(set.scenarios), maxSteps: 200 }), makeSynthRetailEnv(set)]) {
      const driven = new AgentDrivenEnv(env as never, new RecoveringAgent(new ExpertAgent({ mistakes: { rate: 0.2 } }), { rate: 0.2 }));
      const engine = new ScriptedEngine(() => ({ tokens: format.renderCompletion(driven.next()) }));
      const loop = new AgentLoop({ format, engine, sampling: { temperature: 1 }, maxTurns: 60, maxResponseTokens: 60_000, greeting: TAU2_GREETING });
      const out = [];
      for (const [i, task] of tasks.entries()) out.push(await loop.run(driven, { seed: 300 + i, taskId: task.id }));
      runs.push(out);
    }
    assertSame(runs[1], runs[0], 'agent-loop trajectories of the expert');
    assert.ok(runs[0]!.filter((t) => t.reward === 1).length >= 6, 'most episodes are solved');
    assert.ok(runs[0]!.every((t) => t.terminationReason === 'env_terminated' && t.parseErrors === 0));
  });

  it('a tiny random model (same weights, same seeds) on τ² tasks: the same tokens, log-probs and rewards', async () => {
    const model = new GptOssModel(presetConfig('tiny-1m', { vocab_size: bpe.vocabSize, max_position_embeddings: 16384 }), { seed: 3, grads: false });
    const loop = new AgentLoop({ format, engine: createModelEngine(model, { maxBatchSize: 4 }), sampling: { temperature: 1 }, maxTurns: 3, maxResponseTokens: 160, maxTokensPerTurn: 24, greeting: TAU2_GREETING });
    const cases = [['v0', '3', 11], ['v1', '7', 12]] as const;
    for (const [version, taskId, seed] of cases) {
      const [ref, , registered] = retailEnvs({ version });
      const want = await loop.run(ref as unknown as AgentEnv, { seed, taskId });
      const got = await loop.run(registered as unknown as AgentEnv, { seed, taskId });
      assert.ok(want.promptIds.length > 5000, 'the prompt holds τ²’s instructions, policy and tools');
      assertSame(got, want, `tiny model on ${version} task ${taskId}`);
    }
  });
});

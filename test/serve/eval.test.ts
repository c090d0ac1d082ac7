import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadRetailTaskSet } from '../../src/domains/retail/register.ts';
import { generateTaskSet, writeTaskSet } from '../../src/domains/retail/synth/taskset.ts';
import { runEval } from '../../src/serve/eval/runner.ts';
import { withCheckpointAgent } from '../../src/serve/eval/checkpoint-agent.ts';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { presetConfig } from '../../src/model/config.ts';
import { saveModel } from '../../src/model/checkpoint/model-io.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { buildEval, type EvalCliOptions } from '../../src/serve/eval/setup.ts';
import type { Task } from '../../src/tooluse/tasks.ts';
import { isUserStop, TicketUser, userEpisodeContext, type UserViewTurn } from '../../src/tooluse/user.ts';
import { REPO_ROOT, TAU2_RETAIL_DIR } from '../helpers/paths.ts';
import { completion, startFakeOpenAI, toolCall, type FakeOpenAI, type FakeRequest } from './fake-openai.ts';

/**
 * A fake agent model that knows the answers: it recognises the task from the ticket user's opening message and
 * replies with the next gold action as a tool call, then a text stating the communicate_info.
 */
function goldAgentScript(tasks: readonly Task[], options: { failTask?: string } = {}) {
  const byOpening = new Map(tasks.map((t) => [TicketUser.openingMessage(t), t]));
  return (req: FakeRequest) => {
    const msgs = req.body.messages as { role: string; content: string | null; tool_calls?: unknown[] }[];
    const opening = msgs.find((m, i) => i > 0 && m.role === 'user')?.content ?? '';
    const task = byOpening.get(opening);
    if (!task) return { status: 400, body: { error: { message: `fake agent: unknown opening ${opening.slice(0, 40)}` } } };
    if (task.id === options.failTask) return { status: 400, body: { error: { message: 'fake agent refuses this task' } } };
    const gold = task.evaluation_criteria?.actions ?? [];
    const done = msgs.filter((m) => m.role === 'assistant' && m.tool_calls?.length).length;
    if (done < gold.length) return { body: completion({ tool_calls: [toolCall(`call_${done}`, gold[done]!.name, gold[done]!.arguments)] }) };
    const info = task.evaluation_criteria?.communicate_info ?? [];
    return { body: completion({ content: info.length ? `Done: ${info.join(', ')}.` : 'All done.' }) };
  };
}

const base = (out: string, extra: Partial<EvalCliOptions>): EvalCliOptions => ({
  agent: 'openai',
  model: 'gold-model',
  taskSet: 'v0',
  data: TAU2_RETAIL_DIR,
  trials: 1,
  user: 'ticket',
  concurrency: 2,
  maxRequests: 4,
  timeout: 10,
  maxRetries: 1,
  maxSteps: 200,
  maxErrors: 10,
  seed: 300,
  out,
  ...extra,
});

function readJsonl(file: string): any[] {
  return readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
}

describe('longrun eval', () => {
  let fake: FakeOpenAI;
  let dir: string;
  const ids = ['1', '5', '20'];
  const { tasks } = loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v0' });
  let failTask: string | undefined = '20';
  before(async () => {
    const script = goldAgentScript(tasks);
    fake = await startFakeOpenAI((req) => {
      const r = goldAgentScript(tasks, { failTask })(req);
      return r.status ? r : script(req);
    });
    dir = mkdtempSync(join(tmpdir(), 'longrun-eval-'));
  });
  after(async () => {
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs the OpenAI agent k times per task, records infra errors, then resumes only what is missing', async () => {
    const out = join(dir, 'run1');
    const opts = base(out, { baseUrl: fake.url, taskIds: ids.join(','), trials: 2 });
    const first = await runEval(buildEval(opts).run);
    assert.equal(first.planned, 6);
    assert.equal(first.finished, 4);
    assert.equal(first.infrastructureErrors, 2);
    assert.equal(first.complete, false);
    assert.equal(first.metrics!.avgReward, 1);
    assert.equal(first.terminations.user_stop, 4);
    assert.equal(first.terminations.infrastructure_error, 2);
    assert.ok(first.usage.agent.promptTokens > 0);
    const lines = readJsonl(join(out, 'trajectories.jsonl'));
    assert.equal(lines.length, 6);
    const failed = lines.find((l) => l.status === 'infrastructure_error');
    assert.equal(failed.taskId, '20');
    assert.match(failed.error, /fake agent refuses this task/);
    const ok = lines.find((l) => l.status === 'ok' && l.taskId === '5');
    assert.equal(ok.rewardInfo.dbCheck.dbReward, 1);
    assert.equal(ok.messages[0].content, 'Hi! How can I help you today?');

    // A torn last line (a crash mid-write) is dropped on resume.
    appendFileSync(join(out, 'trajectories.jsonl'), '{"taskId": "5", "tri');
    failTask = undefined;
    const before = fake.requests.length;
    const second = await runEval(buildEval(opts).run);
    assert.equal(second.complete, true);
    assert.equal(second.finished, 6);
    assert.equal(second.resumedEpisodes, 4);
    assert.equal(second.droppedLines, 1);
    assert.deepEqual(second.metrics!.passHatK, { 1: 1, 2: 1 });
    const newRequests = fake.requests.slice(before);
    const task20 = tasks.find((t) => t.id === '20')!;
    const expected = 2 * ((task20.evaluation_criteria?.actions?.length ?? 0) + 1);
    assert.equal(newRequests.length, expected, 'only the two failed episodes of task 20 ran again');
    const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'));
    assert.equal(results.complete, true);
    assert.equal(results.config.model, 'gold-model');
    assert.equal(results.comparableToTau2, false, 'the ticket user is not τ²');

    // Same seeds per (task, trial) whatever the order.
    const seeds = readJsonl(join(out, 'trajectories.jsonl')).filter((l) => l.status === 'ok').map((l) => `${l.taskId}/${l.trial}/${l.seed}`);
    assert.equal(new Set(seeds).size, 6);

    // A different evaluation into the same folder is refused.
    await assert.rejects(runEval(buildEval({ ...opts, trials: 3 }).run), /holds a different evaluation.*trials/);
  });

  it('refuses v1 tasks with NL assertions without a judge, and labels the communicate-fallback judge', async () => {
    const out = join(dir, 'v1');
    const v1 = loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v1' }).tasks;
    const judged = v1.find((t) => (t.evaluation_criteria?.nl_assertions?.length ?? 0) > 0 && (t.evaluation_criteria?.communicate_info?.length ?? 0) > 0)!;
    const v1Fake = await startFakeOpenAI(goldAgentScript(v1));
    try {
      assert.throws(() => buildEval(base(out, { baseUrl: v1Fake.url, taskSet: 'v1', taskIds: judged.id })), /need a judge.*--judge-base-url.*communicate-fallback/s);
      const s = await runEval(buildEval(base(out, { baseUrl: v1Fake.url, taskSet: 'v1', taskIds: judged.id, judge: 'communicate-fallback' })).run);
      assert.equal(s.metrics!.avgReward, 1);
      const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'));
      assert.equal(results.comparableToTau2, false);
      assert.ok(results.notes.some((n: string) => /NOT comparable/.test(n)));
      const line = readJsonl(join(out, 'trajectories.jsonl'))[0];
      assert.equal(line.rewardInfo.rewardBreakdown.NL_ASSERTION, 1);
      assert.match(line.rewardInfo.nlAssertions[0].justification, /communicate-fallback/);
    } finally {
      await v1Fake.close();
    }
  });

  it('runs with an LLM user and an LLM judge on the same fake server', async () => {
    const out = join(dir, 'llm');
    const v1 = loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v1' }).tasks;
    const task = v1.find((t) => (t.evaluation_criteria?.nl_assertions?.length ?? 0) > 0)!;
    const llm = await startFakeOpenAI((req) => {
      const model = req.body.model;
      if (model === 'user-m') {
        const turns = req.body.messages.filter((m: any) => m.role === 'assistant').length;
        return { body: completion({ content: turns === 0 ? 'Hi, I need help with an order.' : 'Thanks! ###STOP###' }) };
      }
      if (model === 'judge-m') {
        const asked = req.body.messages[1].content as string;
        assert.match(asked, /^conversation:\nassistant: Hi! How can I help you today\?/);
        return { body: completion({ content: JSON.stringify({ results: task.evaluation_criteria!.nl_assertions!.map((a) => ({ expectedOutcome: a, reasoning: 'fake', metExpectation: false })) }) }) };
      }
      return { body: completion({ content: 'Could you tell me your email?' }) };
    });
    try {
      const s = await runEval(
        buildEval(base(out, { baseUrl: llm.url, model: 'agent-m', taskSet: 'v1', taskIds: task.id, user: 'llm', userModel: 'user-m', judgeModel: 'judge-m' })).run,
      );
      assert.equal(s.finished, 1);
      assert.equal(s.terminations.user_stop, 1);
      assert.equal(s.metrics!.avgReward, 0, 'the judge said the assertions were not met');
      assert.equal(s.usage.user.requests, 2);
      assert.equal(s.usage.judge.requests, 1);
      assert.equal(s.usage.agent.requests, 1);
      const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'));
      assert.equal(results.comparableToTau2, true);
    } finally {
      await llm.close();
    }
  });

  it('runs the rule-based expert with the scripted user on generated tasks', async () => {
    const setDir = join(dir, 'synth');
    const set = generateTaskSet({ worldSeed: 3, taskSeed: 4, count: 4, sizes: { products: 30, users: 80, orders: 200 }, split: 'test' });
    writeTaskSet(setDir, set, readFileSync(join(TAU2_RETAIL_DIR, 'policy.md'), 'utf8'));
    const out = join(dir, 'expert');
    const built = buildEval(base(out, { agent: 'expert', user: 'scripted', tasks: join(setDir, 'tasks.json'), data: undefined, trials: 2 }));
    const s = await runEval(built.run);
    assert.equal(s.planned, 8);
    assert.equal(s.finished, 8);
    assert.ok(s.metrics!.avgReward > 0.5, `expert avg reward ${s.metrics!.avgReward}`);
    assert.equal(s.usage.agent.requests, 0);
  });

  it('--max-refusals gives the scripted customer that patience, records it in config.json and keeps resumes apart', async () => {
    const setDir = join(dir, 'synth-impatient');
    const set = generateTaskSet({ worldSeed: 3, taskSeed: 4, count: 4, sizes: { products: 30, users: 80, orders: 200 }, families: ['cancel'], split: 'test' });
    writeTaskSet(setDir, set, readFileSync(join(TAU2_RETAIL_DIR, 'policy.md'), 'utf8'));
    const out = join(dir, 'impatient');
    const opts = (extra: Partial<EvalCliOptions>) => base(out, { agent: 'expert', user: 'scripted', tasks: join(setDir, 'tasks.json'), data: undefined, ...extra });
    const built = buildEval(opts({ maxRefusals: 1 }));
    // The customer it builds leaves at the first proposal that is not its request.
    const task = set.tasks[0]!;
    const session = built.run.makeUser!().value.start(userEpisodeContext(task, 3));
    const convo: UserViewTurn[] = [{ role: 'user', content: 'Hi! How can I help you today?' }];
    convo.push({ role: 'assistant', content: await session.respond(convo) }, { role: 'user', content: "Please confirm: cancel order #W0000000 with the reason 'no longer needed' (yes/no)?" });
    const reply = await session.respond(convo);
    assert.match(reply, /^No/);
    assert.ok(isUserStop(reply), `the impatient customer leaves at its first refusal: ${reply}`);
    // Without the flag the same customer states its request again.
    const patient = buildEval(opts({})).run.makeUser!().value.start(userEpisodeContext(task, 3));
    const convo2: UserViewTurn[] = [{ role: 'user', content: 'Hi! How can I help you today?' }];
    convo2.push({ role: 'assistant', content: await patient.respond(convo2) }, convo[convo.length - 1]!);
    assert.ok(!isUserStop(await patient.respond(convo2)), 'the default customer stays');

    const s = await runEval(built.run);
    assert.equal(s.finished, 4);
    assert.equal(JSON.parse(readFileSync(join(out, 'config.json'), 'utf8')).maxRefusals, 1);
    await assert.rejects(runEval(buildEval(opts({ maxRefusals: 2 })).run), /different evaluation \(maxRefusals: 1 → 2\)/);
    await assert.rejects(runEval(buildEval(opts({})).run), /maxRefusals: 1 → undefined/);
    assert.throws(() => buildEval({ ...opts({ maxRefusals: 1 }), user: 'ticket' }), /--max-refusals applies to --user scripted/);
    assert.throws(() => buildEval(opts({ maxRefusals: 0 })), /--max-refusals must be an integer >= 1/);
  });

  it('evaluates a checkpoint through the model server (--agent checkpoint), recording token usage', async () => {
    const policy = readFileSync(join(TAU2_RETAIL_DIR, 'policy.md'), 'utf8');
    const bpe = BpeTokenizer.train(policy.repeat(2), { vocabSize: 512 });
    const model = new GptOssModel(presetConfig('tiny-1m', { vocab_size: bpe.vocabSize, max_position_embeddings: 16384 }), { seed: 1, grads: false });
    const ckpt = join(dir, 'ckpt');
    saveModel(ckpt, model);
    model.dispose();
    bpe.save(join(ckpt, 'tokenizer.json'));
    const out = join(dir, 'checkpoint');
    const s = await withCheckpointAgent({ ...base(out, { agent: 'checkpoint', taskIds: '1', maxTokens: 6, maxSteps: 8 }), checkpoint: ckpt }, (o) => runEval(buildEval(o).run));
    assert.equal(s.finished, 1, JSON.stringify(s));
    assert.equal(s.usage.agent.completionTokens % 6, 0);
    assert.ok(s.usage.agent.promptTokens > 1000, 'the τ² system prompt and tools were rendered');
    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    assert.equal(config.baseUrl, null, 'the per-run loopback URL is not part of the identity');
    assert.equal(config.checkpoint, ckpt);
  });

  it('the CLI wires the flags, prints pass^k and exits 0', async () => {
    const out = join(dir, 'cli');
    const args = ['--import', 'tsx', 'src/cli/main.ts', 'eval', '--agent', 'openai', '--base-url', fake.url, '--model', 'gold-model', '--task-set', 'v0', '--data', TAU2_RETAIL_DIR, '--task-ids', '1', '--trials', '2', '--out', out, '--no-progress'];
    const res = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env, OPENAI_API_KEY: '' } });
      let text = '';
      child.stdout.on('data', (d) => (text += d));
      child.stderr.on('data', (d) => (text += d));
      const t = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.on('close', (code) => {
        clearTimeout(t);
        resolve({ code, out: text });
      });
    });
    assert.equal(res.code, 0, res.out);
    assert.match(res.out, /pass\^1=1\.0000 {2}pass\^2=1\.0000/);
    assert.match(res.out, /avg reward: 1\.0000/);
  });
});

/**
 * `longrun rollout --env MODULE_OR_ID`: an env module's demonstrator played through the env (its tools and reward),
 * written as the trajectories `longrun sft --data` trains on.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parseTrajectoriesJsonl } from '../../src/rl/sft-data.ts';
import { REPO_ROOT } from '../helpers/paths.ts';

const run = promisify(execFile);
const MODULE = 'test/fixtures/envs/counter.ts';
const cli = (...args: string[]) => run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: REPO_ROOT, maxBuffer: 16 << 20 });

describe('longrun rollout --env', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-env-rollout-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("records the demonstrator's episodes of a split as SFT trajectories, which `longrun sft --data` trains on", { timeout: 180_000 }, async () => {
    const out = join(dir, 'demo.jsonl');
    const { stdout } = await cli('rollout', '--env', MODULE, '--split', 'test', '--trials', '2', '--seed', '5', '--out', out);
    const text = readFileSync(out, 'utf8');
    const rows = text.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(rows.map((r) => [r.taskId, r.trial, r.seed, r.reward, r.terminationReason, r.family]), [
      ['h4', 0, 5, 2, 'agent_stop', 'large'], ['h4', 1, 6, 2, 'agent_stop', 'large'], ['h7', 0, 7, 2, 'agent_stop', 'large'], ['h7', 1, 8, 2, 'agent_stop', 'large'],
    ]);
    assert.deepEqual(rows[2].messages, [
      { role: 'user', content: 'Bring the counter to 7 with add, then tell me its value.', toolCalls: null },
      { role: 'assistant', content: null, toolCalls: [{ id: 'call_0', name: 'add', arguments: { n: 7 }, requestor: 'assistant' }] },
      { role: 'tool', id: 'call_0', content: '7', requestor: 'assistant', error: false },
      { role: 'assistant', content: 'The counter is at 7.', toolCalls: null },
    ]);
    assert.equal(rows[0].systemPrompt, 'You operate a counter that starts at 0. Use the tools to change and read it.');
    assert.deepEqual(rows[0].tools.map((t: { function: { name: string } }) => t.function.name), ['add', 'read']);
    assert.equal(parseTrajectoriesJsonl(text, out).length, 4);
    assert.match(stdout, /env fixture\/counter-v0, split test: 4 demonstrator episodes over 2 tasks/);
    assert.match(stdout, /mean reward 2\.0000 ± 0\.0000 \(standard error over tasks\)/);

    // The file is SFT data as it is: one step of `longrun sft` on it.
    const sft = join(dir, 'sft');
    await cli('sft', '--data', out, '--out', sft, '--preset', 'tiny-1m', '--vocab-size', '320', '--steps', '1', '--seq-len', '512', '--eval-fraction', '0', '--no-progress');
    const metrics = readFileSync(join(sft, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const train = metrics.filter((m) => m.type === 'train');
    assert.equal(train.length, 1);
    assert.ok(Number.isFinite(train[0].loss) && train[0].loss > 0);
    assert.ok(existsSync(join(sft, 'model', 'config.json')));
  });

  it('refuses an id no module defined, a built-in env, both modes at once, retail flags, an unknown split and a missing module', { timeout: 60_000 }, async () => {
    await assert.rejects(cli('rollout', '--env', 'fixture/counter-v0', '--out', join(dir, 'x.jsonl')), /neither an env module .* nor a registered env id/);
    await assert.rejects(cli('rollout', '--env', 'longrun/retail-v1', '--out', join(dir, 'x.jsonl')), /env longrun\/retail-v1 has no demonstrator .*retail: use --tasks/);
    await assert.rejects(cli('rollout', '--env', MODULE, '--tasks', dir, '--out', join(dir, 'x.jsonl')), /give --tasks .* or --env .*, not both or neither/);
    await assert.rejects(cli('rollout', '--env', MODULE, '--mistake-rate', '0.5', '--out', join(dir, 'x.jsonl')), /--mistake-rate applies to --tasks only/);
    await assert.rejects(cli('rollout', '--env', MODULE, '--split', 'nope', '--out', join(dir, 'x.jsonl')), /env fixture\/counter-v0, split 'nope': no such split; the splits are train, test/);
    await assert.rejects(cli('rollout', '--env', 'test/fixtures/envs/missing.ts', '--out', join(dir, 'x.jsonl')), /env module test\/fixtures\/envs\/missing\.ts does not exist/);
    assert.ok(!existsSync(join(dir, 'x.jsonl')), 'nothing written on bad input');
  });
});

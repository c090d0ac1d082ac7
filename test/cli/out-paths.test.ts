/**
 * Commands that write a file the user names (`rollout --out runs/x/demos.jsonl`, `gen world --out`, `model export
 * --format gguf --out`, …) create its parent folders, as commands that write into an `--out` folder do: a path under a
 * folder that does not exist yet is written, not an ENOENT.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Command } from 'commander';
import { register as registerGen } from '../../src/cli/gen.ts';
import { register as registerModel } from '../../src/cli/model.ts';
import { register as registerRollout, rolloutEnvCommand } from '../../src/cli/rollout.ts';
import { TAU2_RETAIL_DIR } from '../helpers/paths.ts';

/** Runs `longrun ARGS` in this process (the command's output is kept from the test's). */
async function longrun(...args: string[]): Promise<void> {
  const program = new Command().exitOverride();
  for (const reg of [registerGen, registerModel, registerRollout]) reg(program);
  const log = console.log;
  console.log = () => {};
  try {
    await program.parseAsync(['node', 'longrun', ...args]);
  } finally {
    console.log = log;
  }
}

describe('output files under folders that do not exist yet', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-out-paths-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('rollout --env writes its trajectories file, making the folders', async () => {
    const out = join(dir, 'env', 'runs', 'demos.jsonl');
    await rolloutEnvCommand({ env: 'test/fixtures/envs/counter.ts', split: 'test', trials: 1, seed: 0, out }, () => {});
    assert.equal(readFileSync(out, 'utf8').trim().split('\n').length, 2);
  });

  it('rollout --tasks writes its trajectories file, making the folders', { timeout: 120_000 }, async () => {
    const tasks = join(dir, 'set');
    await longrun('gen', 'tasks', '--seed', '3', '--count', '2', '--products', '10', '--users', '10', '--orders', '20', '--policy', join(TAU2_RETAIL_DIR, 'policy.md'), '--out', tasks);
    const out = join(dir, 'synth', 'runs', 'demos.jsonl');
    await longrun('rollout', '--tasks', tasks, '--out', out, '--no-progress');
    const rows = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { reward: number });
    assert.equal(rows.length, 2);
  });

  it('gen world and model export --format gguf write their files, making the folders', { timeout: 120_000 }, async () => {
    const world = join(dir, 'worlds', 'w1', 'db.json');
    await longrun('gen', 'world', '--seed', '1', '--products', '5', '--users', '5', '--orders', '5', '--out', world);
    assert.ok(JSON.parse(readFileSync(world, 'utf8')).users);
    const model = join(dir, 'models', 'm');
    await longrun('model', 'init', '--preset', 'tiny-1m', '--out', model);
    const gguf = join(dir, 'exports', 'gguf', 'm.gguf');
    await longrun('model', 'export', model, '--format', 'gguf', '--out', gguf);
    assert.ok(existsSync(gguf));
  });
});

/**
 * The dashboard on runs whose env is not retail: rewards on the env's own scale (here −7 to 2) get charts whose y
 * range comes from the data, while runs with rewards in [0, 1] (retail) keep their 0–1 axis as before. The page's
 * script must still parse after the trajectory viewer stopped colouring non-[0, 1] rewards as failures.
 */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Script } from 'node:vm';
import { buildOverview, withinUnit } from '../../src/serve/dashboard/overview.ts';
import { DASHBOARD_HTML } from '../../src/serve/dashboard/page.ts';
import { startDashboard } from '../../src/serve/dashboard/server.ts';
import { api } from './helpers.ts';

type Row = Record<string, unknown>;
const writeJsonl = (path: string, rows: readonly unknown[]) => {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
};

/** GRPO metrics rows: validations at steps 0, 2, 4 with the given means, training rewards `train[i]` at step i + 1. */
function grpoRows(val: readonly number[], train: readonly number[]): Row[] {
  const rows: Row[] = [{ kind: 'val', step: 0, 'val/reward_mean': val[0], 'val/reward_se': 0.5 }];
  train.forEach((r, i) => {
    rows.push({ kind: 'train', step: i + 1, 'reward/mean': r, 'timing/step': 10 });
    if ((i + 1) % 2 === 0) rows.push({ kind: 'val', step: i + 1, 'val/reward_mean': val[(i + 1) / 2], 'val/reward_se': 0.5 });
  });
  return rows;
}

describe('longrun dashboard: runs on an env with its own reward scale', () => {
  it('takes the y range of reward charts from the data unless every mean lies in [0, 1]', () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-dash-env-'));
    try {
      writeJsonl(join(dir, 'counter/grpo/metrics.jsonl'), grpoRows([-5.5, -3, 0.5], [-6, -4, -2, 1]));
      writeJsonl(join(dir, 'counter/grpo/episodes.jsonl'), [{ kind: 'val', step: 0, taskId: 'h4', sample: 0, reward: -4, messages: [] }, { kind: 'val', step: 0, taskId: 'h7', sample: 0, reward: -7, messages: [] }]);
      mkdirSync(join(dir, 'eval-counter'));
      writeFileSync(join(dir, 'eval-counter/results.json'), JSON.stringify({ config: { agent: 'checkpoint:a', trials: 2, env: 'fixture/counter-v0' }, env: 'fixture/counter-v0', metrics: { numEpisodes: 4, numTasks: 2, avgReward: -5.5, successRate: 0, rewardStdErr: 1.5 } }));
      writeJsonl(join(dir, 'eval-counter/trajectories.jsonl'), [{ taskId: 'h4', trial: 0, status: 'ok', reward: -4, messages: [] }]);
      const ov = buildOverview(dir);
      const held = ov.headline.charts.find((c) => c.id === 'heldout-step')!;
      assert.equal(held.yRange, undefined, 'no fixed 0–1 axis');
      assert.equal(held.yLabel, 'mean reward per task, ± 1 s.e.');
      assert.deepEqual(held.series[0].points, [[0, -5.5], [2, -3], [4, 0.5]]);
      assert.deepEqual(held.references, [{ name: 'eval · eval-counter (checkpoint:a)', y: -5.5, se: 1.5 }]);
      const wall = ov.headline.charts.find((c) => c.id === 'heldout-wall')!;
      assert.equal(wall.yRange, undefined);
      const train = ov.panels.find((c) => c.id === 'train-reward')!;
      assert.equal(train.yRange, undefined);
      assert.equal(train.yLabel, 'mean reward per episode');
      assert.deepEqual(train.series[0].points, [[1, -6], [2, -4], [3, -2], [4, 1]]);
      assert.deepEqual(ov.runs.map((r) => r.name).sort(), ['counter', 'eval-counter']);

      // The same layout with rewards in [0, 1] keeps the 0–1 axis (and its label) as retail runs always had.
      const unit = join(dir, 'unit');
      writeJsonl(join(unit, 'grpo/metrics.jsonl'), grpoRows([0.2, 0.25, 0.3], [0.1, 0.2, 0.3, 0.4]));
      const ou = buildOverview(unit);
      const heldUnit = ou.headline.charts.find((c) => c.id === 'heldout-step')!;
      assert.deepEqual(heldUnit.yRange, [0, 1]);
      assert.equal(heldUnit.yLabel, 'mean reward per task (0–1), ± 1 s.e.');
      assert.deepEqual(ou.panels.find((c) => c.id === 'train-reward')!.yRange, [0, 1]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('withinUnit: means in [0, 1] only', () => {
    assert.equal(withinUnit([0, 0.5, 1]), true);
    assert.equal(withinUnit([]), true);
    assert.equal(withinUnit([0.5, 1.0001]), false);
    assert.equal(withinUnit([-0.01, 0.5]), false);
  });

  it('serves the page, whose script parses, and the trajectories of such a run with their rewards as recorded', async () => {
    const script = /<script>([\s\S]*)<\/script>/.exec(DASHBOARD_HTML)![1]!;
    assert.doesNotThrow(() => new Script(script, { filename: 'dashboard-page.js' }));
    assert.match(script, /const rewardClass = \(r, unit\) => \(unit \? \(r === 1 \? 'ok' : 'bad'\) : 'plain'\)/);
    const dir = mkdtempSync(join(tmpdir(), 'longrun-dash-env-srv-'));
    try {
      writeJsonl(join(dir, 'trajectories.jsonl'), [{ taskId: 'h4', trial: 0, status: 'ok', reward: -4, messages: [] }, { taskId: 'h7', trial: 0, status: 'ok', reward: 2, messages: [] }]);
      writeFileSync(join(dir, 'results.json'), JSON.stringify({ config: { agent: 'checkpoint:a', trials: 1 }, metrics: { numEpisodes: 2, numTasks: 2, avgReward: -1, successRate: 0, rewardStdErr: 3 } }));
      const h = await startDashboard({ runDir: dir, port: 0 });
      try {
        const sets = (await api(h.url, 'GET', '/api/overview')).body.episodeSets as { id: string }[];
        assert.equal(sets.length, 1);
        const items = (await api(h.url, 'GET', `/api/trajectories?set=${encodeURIComponent(sets[0]!.id)}`)).body.items as { reward: number }[];
        assert.deepEqual(items.map((i) => i.reward), [-4, 2]);
      } finally {
        await h.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

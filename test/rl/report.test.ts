import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { histogram, renderPanels, runPanels } from '../../src/rl/report.ts';
import { heldoutCurve, plotCommand } from '../../src/cli/plot.ts';

const jsonl = (rows: object[]) => rows.map((r) => JSON.stringify(r)).join('\n') + '\n';

describe('run report', () => {
  it('histogram bins by floor(value / width) and counts', () => {
    assert.deepEqual(histogram([0, 63, 64, 130, 129, 500], 64), [[0, 2], [64, 1], [128, 2], [448, 1]]);
  });

  it('builds the four panels from trainer files; a resumed step keeps its last line', () => {
    const panels = runPanels({
      sftMetrics: [{ type: 'train', step: 1, loss: 7 }, { type: 'train', step: 2, loss: 5 }, { type: 'eval', step: 2, evalLoss: 6 }],
      grpoMetrics: [
        { kind: 'val', step: 0, 'val/reward_mean': 0.2 },
        { step: 1, 'reward/mean': 0.3, tool_error_rate: 0.5 },
        { step: 1, 'reward/mean': 0.35, tool_error_rate: 0.4 },
        { kind: 'val', step: 1, 'val/reward_mean': 0.45 },
      ],
      episodes: [{ promptTokens: 900, responseTokens: 300 }, { promptTokens: 900, responseTokens: 2000 }],
      compare: [{ name: 'continued SFT', points: [[0, 0.2], [1, 0.25]] }],
      slidingWindow: 64,
    });
    assert.deepEqual(panels.map((p) => p.title.split(' ')[0]), ['SFT', 'Held-out', 'Training', 'Episode']);
    assert.deepEqual(panels[0].series[0].points, [[1, 7], [2, 5]]);
    assert.deepEqual(panels[1].series.map((s) => s.name), ['GRPO', 'continued SFT']);
    assert.deepEqual(panels[1].series[0].points, [[0, 0.2], [1, 0.45]]);
    assert.deepEqual(panels[2].series[0].points, [[1, 0.35]]);
    assert.equal(panels[3].series[0].points.reduce((a, p) => a + p[1], 0), 2);
    assert.deepEqual(panels[3].marks, [{ x: 64, label: 'window 64' }]);
    const svg = renderPanels(panels, { title: 'a <run>' });
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.equal((svg.match(/<polyline/g) ?? []).length, 3, 'SFT loss, GRPO validation, continued SFT (single-point series are dots)');
    assert.match(svg, /a &lt;run&gt;/);
  });

  it('draws held-out reward against wall time with error bars from eval folders', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-heldout-'));
    try {
      const evalDir = (name: string, avgReward: number, rewardStdErr: number) => {
        mkdirSync(join(dir, name));
        writeFileSync(join(dir, name, 'results.json'), JSON.stringify({ metrics: { avgReward, rewardStdErr } }));
        return join(dir, name);
      };
      const base = evalDir('base', 0.25, 0.03), grpo = evalDir('grpo', 0.45, 0.04), sft = evalDir('sft', 0.3, 0.035);
      const curve = heldoutCurve(`GRPO=60:${grpo},0:${base}`);
      assert.deepEqual(curve, { name: 'GRPO', points: [{ minutes: 60, reward: 0.45, stderr: 0.04 }, { minutes: 0, reward: 0.25, stderr: 0.03 }] });
      const [panel] = runPanels({ heldout: [curve, heldoutCurve(`SFT=0:${base},60:${sft}`)] });
      assert.equal(panel.xLabel, 'training wall time (minutes)');
      assert.deepEqual(panel.series[0].points, [[0, 0.25], [60, 0.45]], 'points sorted by time');
      assert.deepEqual(panel.series[0].errors, [0.03, 0.04]);
      const svg = renderPanels([panel]);
      assert.equal((svg.match(/class="errbar"/g) ?? []).length, 4, 'one bar per point');
      const out = await plotCommand({ heldout: [`GRPO=0:${base},60:${grpo}`], out: join(dir, 'fig.svg') });
      assert.match(readFileSync(out, 'utf8'), /against training wall time/);
      assert.throws(() => heldoutCurve('GRPO'), /NAME=MIN:PATH/);
      assert.throws(() => heldoutCurve(`GRPO=x:${base}`), /is not MIN:PATH/);
      assert.throws(() => heldoutCurve(`GRPO=5:${join(dir, 'missing')}`), /cannot read .*missing/);
      mkdirSync(join(dir, 'empty'));
      assert.throws(() => heldoutCurve(`GRPO=5:${join(dir, 'empty')}`), /cannot read .*results.json/);
      writeFileSync(join(dir, 'base', 'results.json'), '{"metrics": {}}');
      assert.throws(() => heldoutCurve(`GRPO=0:${base}`), /no metrics.avgReward/);
      // A per-episode file: the mean over episodes and the standard error over task means (as longrun eval's).
      const lines = join(dir, 'grpo.heldout.txt');
      writeFileSync(lines, ['=== t0 (cancel) reward 1 trial 0 user_stop', 'a transcript line', '=== t0 (cancel) reward 0 trial 1 max_turns',
        '=== t1 (info) reward 1 trial 0 user_stop', '=== t1 (info) reward 1 trial 1 user_stop'].join('\n'));
      const fromFile = heldoutCurve(`GRPO=0:${lines}`).points[0]!;
      assert.equal(fromFile.reward, 0.75);
      assert.ok(Math.abs(fromFile.stderr! - 0.25) < 1e-12, `task means 0.5 and 1: s.e. 0.25, got ${fromFile.stderr}`);
      writeFileSync(lines, 'no episodes here\n');
      assert.throws(() => heldoutCurve(`GRPO=0:${lines}`), /no episode lines/);
      writeFileSync(lines, '=== t0 (cancel) reward x\n');
      assert.throws(() => heldoutCurve(`GRPO=0:${lines}`), /bad reward/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('longrun plot writes an SVG and rejects bad arguments clearly', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-plot-'));
    try {
      const grpo = join(dir, 'metrics.jsonl');
      writeFileSync(grpo, jsonl([{ kind: 'val', step: 0, 'val/reward_mean': 0.1 }, { kind: 'val', step: 4, 'val/reward_mean': 0.4 }]));
      const out = await plotCommand({ grpo, out: join(dir, 'fig.svg') });
      assert.match(readFileSync(out, 'utf8'), /Held-out validation/);
      await assert.rejects(plotCommand({ out: join(dir, 'x.svg') }), /nothing to plot/);
      await assert.rejects(plotCommand({ grpo, out: join(dir, 'x.jpg') }), /must end in .svg or .png/);
      await assert.rejects(plotCommand({ grpo, compare: ['nofile'], out: join(dir, 'x.svg') }), /NAME=FILE/);
      writeFileSync(join(dir, 'bad.jsonl'), '{"step": 1}\nnot json\n');
      await assert.rejects(plotCommand({ grpo: join(dir, 'bad.jsonl'), out: join(dir, 'x.svg') }), /bad.jsonl:2: not valid JSON/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { histogram, renderPanels, runPanels } from '../../src/rl/report.ts';
import { plotCommand } from '../../src/cli/plot.ts';

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

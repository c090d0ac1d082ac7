import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { checkpointDirName } from '../../src/rl/checkpoint-dirs.ts';
import { buildOverview } from '../../src/serve/dashboard/overview.ts';
import { dashboardScreenshot } from '../../src/serve/dashboard/screenshot.ts';
import { discoverRun } from '../../src/serve/dashboard/run-files.ts';
import { startDashboard, type DashboardHandle } from '../../src/serve/dashboard/server.ts';
import { api } from './helpers.ts';
import { requireChromium, SKIP_WITHOUT_CHROMIUM } from '../helpers/chromium.ts';

const run = promisify(execFile);

type Row = Record<string, any>;
const jsonl = (path: string): Row[] => readFileSync(path, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const writeJsonl = (path: string, rows: readonly unknown[]) => {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
};
const f3 = (x: number) => x.toFixed(3);

const XSS = '<img src=x onerror="window.__xss=1">';

/** A folder with one metrics file and one trajectories file side by side (the shape a hand-made folder has). */
function writeFlatRun(dir: string): void {
  const metrics = [];
  for (let step = 1; step <= 5; step++) metrics.push({ kind: 'train', step, 'reward/mean': step / 10, 'actor/grad_norm': 1 / step });
  metrics.push({ kind: 'val', step: 5, 'val/pass^1': 0.4 });
  writeJsonl(join(dir, 'metrics.jsonl'), metrics);
  const episodes = [
    {
      taskId: '5',
      trial: 0,
      status: 'ok',
      reward: 1,
      terminationReason: 'user_stop',
      messages: [
        { role: 'assistant', content: 'Hi! How can I help you today?', toolCalls: null },
        { role: 'user', content: `I want to return ${XSS}`, toolCalls: null },
        { role: 'assistant', content: null, toolCalls: [{ id: 'c0', name: 'find_user_id_by_email', arguments: { email: 'a@b.c' }, requestor: 'assistant' }] },
        { role: 'tool', id: 'c0', content: 'Error: User not found', requestor: 'assistant', error: true },
      ],
    },
    { taskId: '7', trial: 1, status: 'infrastructure_error', reward: null, terminationReason: 'infrastructure_error', error: 'LLM down', messages: [] },
  ];
  writeFileSync(join(dir, 'trajectories.jsonl'), episodes.map((e) => JSON.stringify(e)).join('\n') + '\n{"torn');
}

/** GRPO rows as the trainer writes them (the keys the dashboard reads), validations at 0, 2, 4. */
function grpoRows(rewards: number[], extra: Row = {}): Row[] {
  const rows: Row[] = [{ kind: 'val', step: 0, 'val/reward_mean': rewards[0], 'val/reward_se': 0.05, 'val/success': rewards[0], 'val/tool_error_rate': 0.2, 'val/parse_error_rate': 0.1 }];
  for (let step = 1; step <= 4; step++) {
    rows.push({ kind: 'train', step, 'reward/mean': 0.1 * step, 'success/mean': 0.1 * step, 'adv/zero_groups': 1 - step / 8, tool_error_rate: 0.3, parse_error_rate: 0.2, 'response_length/mean': 100 + step, 'turns/mean': 5, 'timing/step': 30, ...extra });
    if (step % 2 === 0) rows.push({ kind: 'val', step, 'val/reward_mean': rewards[step / 2], 'val/reward_se': 0.05, 'val/success': rewards[step / 2] });
  }
  return rows;
}

describe('longrun dashboard: run-folder discovery and the overview', () => {
  it('finds the stages our commands write in a folder of runs: GRPO, its RFT and continued-SFT baselines, an eval', () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-dash-runs-'));
    try {
      writeJsonl(join(dir, 'retail-grpo/grpo/metrics.jsonl'), grpoRows([0.2, 0.25, 0.3]));
      // Four tasks per validation, one sample each: the change is paired over them.
      const eps: Row[] = [];
      for (const [step, rs] of [[0, [0, 0, 1, 0]], [2, [1, 0, 1, 0]], [4, [1, 1, 1, 0]]] as const) rs.forEach((reward, i) => eps.push({ kind: 'val', step, taskId: `validation_${i}`, sample: 0, reward, messages: [] }));
      writeJsonl(join(dir, 'retail-grpo/grpo/episodes.jsonl'), eps);
      for (const ckpt of ['step-00000004', 'step_2']) { // a checkpoint folder, and one of the older GRPO naming
        mkdirSync(join(dir, `retail-grpo/grpo/${ckpt}/policy`), { recursive: true });
        writeJsonl(join(dir, `retail-grpo/grpo/${ckpt}/policy/metrics.jsonl`), [{ kind: 'train', step: 1 }]);
      }
      writeJsonl(join(dir, 'retail-rft/grpo/metrics.jsonl'), grpoRows([0.2, 0.22, 0.24], { 'rft/kept_share': 0.2 }));
      writeJsonl(join(dir, 'retail-sft-continued/sft/metrics.jsonl'), [{ type: 'train', step: 1, loss: 1.5, tokens: 100, tokensPerSec: 50 }, { type: 'eval', step: 1, evalLoss: 1.7 }]);
      mkdirSync(join(dir, 'eval-base'));
      writeFileSync(join(dir, 'eval-base/results.json'), JSON.stringify({ config: { agent: 'checkpoint:retail-base', trials: 2 }, metrics: { numEpisodes: 8, numTasks: 4, avgReward: 0.25, successRate: 0.25, rewardStdErr: 0.1 }, wallS: 12 }));
      writeJsonl(join(dir, 'eval-base/trajectories.jsonl'), [{ taskId: 'validation_0', trial: 0, reward: 0, messages: [] }]);

      const layout = discoverRun(dir);
      assert.deepEqual(layout.runs.map((r) => [r.name, r.stages.map((s) => `${s.kind}:${s.name}`)]), [
        ['retail-grpo', ['grpo:grpo']], ['retail-rft', ['rft:grpo']], ['retail-sft-continued', ['sft:sft']], ['eval-base', ['eval:eval-base']],
      ]);
      assert.ok(!layout.metrics.some((f) => f.includes('step-00000004') || f.includes('step_2')), 'checkpoint folders are not stages');
      const ov = buildOverview(dir);
      const [grpo, rft] = ov.headline.arms;
      assert.equal(grpo.kind, 'grpo');
      assert.equal(rft.kind, 'rft');
      assert.deepEqual(grpo.points.map((p) => [p.step, p.wallS, p.reward, p.episodes]), [[0, 0, 0.2, 4], [2, 60, 0.25, 4], [4, 120, 0.3, 4]]);
      assert.deepEqual(ov.headline.baselines.map((b) => [b.label, b.reward, b.se, b.episodes]), [['eval · eval-base (checkpoint:retail-base)', 0.25, 0.1, 8]]);
      // Paired over the four tasks: differences 1, 1, 0, 0 → mean 0.5, s.e. √(1/3)/2.
      const ch = ov.headline.change!;
      assert.equal(ch.paired, true);
      assert.ok(Math.abs(ch.delta - 0.1) < 1e-12, 'delta from the metrics rows');
      assert.ok(Math.abs(ch.se! - Math.sqrt(1 / 3) / 2) < 1e-12);
      assert.match(ov.headline.notes.join(' '), /retail-sft-continued: SFT only/);
      assert.deepEqual(ov.headline.charts.map((c) => [c.id, c.series.length, c.references!.length]), [['heldout-step', 2, 1], ['heldout-wall', 2, 1]]);
      assert.equal(ov.headline.charts[1].xLabel, 'wall time of the training steps (min)');
      assert.deepEqual(ov.headline.charts[1].series[0].points, [[0, 0.2], [1, 0.25], [2, 0.3]]);
      const zero = ov.panels.find((c) => c.id === 'zero-adv')!;
      assert.deepEqual(zero.series[0].points, [[1, 87.5], [2, 75], [3, 62.5], [4, 50]], 'shares as percentages');
      assert.ok(ov.panels.some((c) => c.id === 'sft:retail-sft-continued/sft/metrics.jsonl'));
      assert.deepEqual(ov.episodeSets.map((s) => s.label), [
        'held-out · retail-grpo/grpo step 0 (before GRPO)', 'held-out · retail-grpo/grpo step 2', 'held-out · retail-grpo/grpo step 4 (after GRPO)', 'eval · eval-base',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('longrun dashboard: a hand-made folder', () => {
  let dir: string;
  let h: DashboardHandle;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-dash-'));
    writeFlatRun(dir);
    h = await startDashboard({ runDir: dir, port: 0 });
  });
  after(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the run files, metric series and trajectories; never a path from the client', async () => {
    const r = await api(h.url, 'GET', '/api/run');
    assert.deepEqual(r.body.metrics, ['metrics.jsonl']);
    assert.deepEqual(r.body.trajectories, ['trajectories.jsonl']);
    const m = await api(h.url, 'GET', '/api/metrics?file=metrics.jsonl');
    const reward = m.body.series.find((s: any) => s.key === 'reward/mean');
    assert.equal(reward.group, 'train');
    assert.deepEqual(reward.points.map((p: number[]) => p[0]), [1, 2, 3, 4, 5]);
    assert.equal(m.body.series.length, 3);
    const t = await api(h.url, 'GET', '/api/trajectories?file=trajectories.jsonl');
    assert.equal(t.body.items.length, 2);
    assert.equal(t.body.skipped, 1);
    assert.deepEqual(t.body.items[0], { index: 0, taskId: '5', trial: 0, reward: 1, status: 'ok', terminationReason: 'user_stop', turns: 4 });
    const one = await api(h.url, 'GET', '/api/trajectory?file=trajectories.jsonl&index=0');
    assert.equal(one.body.messages.length, 4);
    assert.equal((await api(h.url, 'GET', '/api/trajectory?file=trajectories.jsonl&index=9')).status, 404);
    assert.equal((await api(h.url, 'GET', '/api/metrics?file=../../etc/passwd')).status, 404);
    assert.equal((await api(h.url, 'GET', '/api/trajectories?set=' + encodeURIComponent('../x.jsonl#val@0'))).status, 404);
    assert.equal((await api(h.url, 'GET', '/api/metrics')).status, 400);
    assert.equal((await api(h.url, 'POST', '/api/run', {})).status, 405);
  });

  it('renders it in headless Chromium with data shown as text, never as markup', { skip: SKIP_WITHOUT_CHROMIUM }, async () => {
    const executablePath = requireChromium();
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath, args: ['--no-sandbox'] });
    try {
      const { page, errors } = await openPage(browser, h.url);
      assert.equal(await page.locator('#heldout tbody td.empty').count(), 1, 'no held-out measurement in this folder');
      const points = await page.locator('figure[data-chart="train-reward"] polyline').first().getAttribute('points');
      assert.equal(points!.split(' ').length, 5);
      assert.match((await page.locator('#trajStats').textContent())!, /left: 2 episodes, mean reward 1\.000; 1 unreadable line/);
      await page.locator('#paneA .msg').first().waitFor();
      assert.equal(await page.locator('#paneA .msg').count(), 4);
      assert.match((await page.locator('#paneA .call').first().textContent())!, /find_user_id_by_email\(\{"email":"a@b.c"\}\)/);
      assert.equal(await page.locator('#paneA .msg.error').count(), 1);
      assert.ok((await page.locator('#paneA').textContent())!.includes(XSS));
      assert.equal(await page.locator('img').count(), 0);
      assert.equal(await page.evaluate(() => (globalThis as { __xss?: number }).__xss), undefined);
      await page.locator('tr.traj').nth(1).click();
      await page.locator('#paneA', { hasText: 'LLM down' }).waitFor({ timeout: 10_000 });
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
    }
  });
});

async function openPage(browser: Browser, url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  await page.goto(url, { timeout: 20_000 });
  await page.waitForSelector('body[data-ready]', { timeout: 30_000 });
  assert.equal(await page.getAttribute('body', 'data-ready'), 'true', (await page.locator('#errors').textContent()) ?? '');
  assert.equal(await page.locator('#errors').textContent(), '');
  return { page, errors };
}

/** The text cells of the held-out table's row for one arm point or baseline. */
async function heldOutRow(page: Page, selector: string): Promise<string[]> {
  return page.locator(`#heldout tbody tr${selector} td`).allTextContents();
}

describe('longrun dashboard on the folders our own commands write', { skip: SKIP_WITHOUT_CHROMIUM }, () => {
  let root: string;
  let demo: string;
  let evalDir: string;
  let browser: Browser;
  before(async () => {
    requireChromium();
    root = mkdtempSync(join(tmpdir(), 'longrun-dash-e2e-'));
    demo = join(root, 'demo');
    evalDir = join(root, 'eval');
    const cli = (...args: string[]) => run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { maxBuffer: 16 << 20 });
    await cli('demo', '--quick', '--seed', '3', '--out', demo);
    const latest = readFileSync(join(demo, 'grpo', 'latest'), 'utf8').trim();
    await cli('model', 'settings', '--checkpoint', join(demo, 'grpo', checkpointDirName(Number(latest)), 'policy', 'model'), '--from-run', join(demo, 'run.yaml'), '--out', join(root, 'model'));
    await cli('eval', '--agent', 'checkpoint', '--checkpoint', join(root, 'model'), '--tasks', join(demo, 'data', 'validation', 'tasks.json'), '--user', 'scripted', '--trials', '2', '--out', evalDir);
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: requireChromium(), args: ['--no-sandbox'] });
  }, { timeout: 300_000 });
  after(async () => {
    await browser?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('`longrun dashboard DEMO_OUT` after `longrun demo --quick`: stages, the headline panel from the metrics files, before/after trajectories', { timeout: 120_000 }, async () => {
    const metrics = jsonl(join(demo, 'grpo', 'metrics.jsonl'));
    const vals = metrics.filter((m) => m.kind === 'val');
    const train = metrics.filter((m) => m.kind === 'train');
    const episodes = jsonl(join(demo, 'grpo', 'episodes.jsonl'));
    const valTasks = (JSON.parse(readFileSync(join(demo, 'data', 'validation', 'tasks.json'), 'utf8')) as unknown[]).length;
    const h = await startDashboard({ runDir: demo, port: 0 });
    try {
      const { page, errors } = await openPage(browser, h.url);
      // The stages of one run, in pipeline order.
      assert.deepEqual(await page.locator('.stage').evaluateAll((ls) => ls.map((l) => `${l.getAttribute('data-kind')}:${l.getAttribute('data-stage')}`)), ['data:data', 'grpo:grpo'], 'the demo starts from the shipped base: no SFT stage');
      assert.match((await page.locator('#runSummary').textContent())!, /demo --quick, seed 3/);

      // The headline: every validation row of grpo/metrics.jsonl, its reward, standard error and wall time.
      assert.ok(vals.length >= 2);
      for (const v of vals) {
        const cells = await heldOutRow(page, `[data-step="${v.step}"]`);
        const wall = train.filter((t) => t.step <= v.step).reduce((a, t) => a + t['timing/step'], 0);
        assert.deepEqual(cells.slice(1, 6), [String(v.step), `${wall.toFixed(1)} s`, f3(v['val/reward_mean']), f3(v['val/reward_se']), f3(v['val/success'])]);
        assert.equal(cells[6], `${valTasks} (${valTasks} tasks)`, 'validation episodes counted from episodes.jsonl');
      }
      const verdict = page.locator('#verdict');
      assert.equal(Number(await verdict.getAttribute('data-before')), vals[0]['val/reward_mean']);
      assert.equal(Number(await verdict.getAttribute('data-after')), vals.at(-1)!['val/reward_mean']);
      assert.match((await verdict.textContent())!, new RegExp(`at step 0 \\(before RL\\) → ${f3(vals.at(-1)!['val/reward_mean'])}.* at step ${vals.at(-1)!.step}`));
      for (const id of ['heldout-step', 'heldout-wall']) {
        const fig = page.locator(`figure[data-chart="${id}"]`);
        assert.equal((await fig.locator('polyline').getAttribute('points'))!.split(' ').length, vals.length);
        assert.equal(await fig.locator('.band').count(), 1, 'a standard-error band');
        const labels = await fig.locator('.axis-label').allTextContents();
        assert.deepEqual(labels, [id === 'heldout-step' ? 'GRPO step' : 'wall time of the training steps (s)', 'mean reward per task (0–1), ± 1 s.e.']);
      }
      // The training panels, in order, with their values readable as text.
      const ids = await page.locator('#panels figure').evaluateAll((fs) => fs.map((f) => f.getAttribute('data-chart')));
      assert.deepEqual(ids, ['train-reward', 'zero-adv', 'errors', 'lengths', 'turns']);
      const zeroRows = await page.locator('figure[data-chart="zero-adv"] table.values tbody tr').evaluateAll((rs) => rs.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));
      assert.deepEqual(zeroRows.map((r) => r[0]), train.map((t) => String(t.step)));
      zeroRows.forEach((r, i) => assert.ok(Math.abs(Number(r[1]) - train[i]['adv/zero_groups'] * 100) < 5e-4, `${r[1]} is ${train[i]['adv/zero_groups']} as a percentage`));
      // The long tail behind a selector.
      assert.ok(await page.locator('#tailSelect option').count() > 20);
      const picked = JSON.parse((await page.locator('#tailSelect').inputValue())) as string[];
      await page.locator('#tailChart figcaption', { hasText: picked.join(' · ') }).waitFor();
      const tailKey = picked[2];
      const tailRows = jsonl(join(demo, picked[0])).filter((m) => (m.kind ?? m.type) === picked[1] && typeof m[tailKey] === 'number');
      assert.equal(await page.locator('#tailChart table.values tbody tr').count(), tailRows.length);

      // The viewer: the validation before GRPO beside the one after, matched by task, conversations on both sides.
      assert.match((await page.locator('#setA option:checked').textContent())!, /held-out · grpo step 0 \(before GRPO\)/);
      assert.match((await page.locator('#setB option:checked').textContent())!, new RegExp(`held-out · grpo step ${vals.at(-1)!.step} \\(after GRPO\\)`));
      assert.equal(await page.locator('tr.traj').count(), valTasks);
      await page.locator('#paneB .msg').first().waitFor();
      const first = episodes.find((e) => e.kind === 'val' && e.step === 0)!;
      const last = episodes.find((e) => e.kind === 'val' && e.step === vals.at(-1)!.step && e.taskId === first.taskId)!;
      assert.equal(await page.locator('#paneA .msg').count(), first.messages.length);
      assert.equal(await page.locator('#paneB .msg').count(), last.messages.length);
      assert.match((await page.locator('#paneA .head').textContent())!, new RegExp(`task ${first.taskId} · sample 0`));
      assert.match((await page.locator('#paneB .head').textContent())!, new RegExp(`task ${first.taskId} · sample 0`));
      // Another task by keyboard.
      await page.locator('tr.traj').nth(1).focus();
      await page.keyboard.press('Enter');
      await page.locator('#paneA .head', { hasText: `task ${episodes.filter((e) => e.kind === 'val' && e.step === 0)[1].taskId} ` }).waitFor({ timeout: 10_000 });
      assert.deepEqual(errors, []);
    } finally {
      await h.close();
    }
  });

  it('`longrun dashboard EVAL_OUT` after `longrun eval --agent checkpoint` on the tiny model: its numbers and transcripts', { timeout: 60_000 }, async () => {
    const results = JSON.parse(readFileSync(join(evalDir, 'results.json'), 'utf8')) as Row;
    const trajectories = jsonl(join(evalDir, 'trajectories.jsonl'));
    const h = await startDashboard({ runDir: evalDir, port: 0 });
    try {
      const { page, errors } = await openPage(browser, h.url);
      assert.deepEqual(await page.locator('.stage').evaluateAll((ls) => ls.map((l) => l.getAttribute('data-kind'))), ['eval']);
      const cells = await heldOutRow(page, '.baseline');
      assert.deepEqual(cells.slice(3), [f3(results.metrics.avgReward), f3(results.metrics.rewardStdErr), f3(results.metrics.successRate), `${results.metrics.numEpisodes} (${results.metrics.numTasks} tasks × 2)`]);
      assert.match((await page.locator('#verdict').textContent())!, /No GRPO stage/);
      assert.equal(await page.locator('tr.traj').count(), trajectories.length, 'one row per task and trial');
      await page.locator('#paneA .msg').first().waitFor();
      const shown = await page.locator('#paneA .head').textContent();
      const t = trajectories.find((x) => shown!.startsWith(`task ${x.taskId} · sample ${x.trial} `))!;
      assert.ok(t, shown!);
      assert.equal(await page.locator('#paneA .msg').count(), t.messages.length);
      assert.equal(await page.locator('#paneA .msg.error').count(), t.messages.filter((m: Row) => m.error === true || (m.role === 'tool' && String(m.content).startsWith('Error'))).length);
      assert.deepEqual(errors, []);
    } finally {
      await h.close();
    }
  });

  it('`longrun dashboard DEMO_OUT --screenshot FILE` writes the loaded page as a PNG', { timeout: 60_000 }, async () => {
    const out = join(root, 'dashboard.png');
    await dashboardScreenshot({ runDir: demo, out, chromium: requireChromium(), width: 1000 });
    const png = readFileSync(out);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.equal(png.readUInt32BE(16), 1000, 'the viewport width');
    assert.ok(png.readUInt32BE(20) > 1500, 'the full page, not one screen');
  });

  it('a folder holding both runs: the eval beside GRPO in the headline', { timeout: 60_000 }, async () => {
    const results = JSON.parse(readFileSync(join(evalDir, 'results.json'), 'utf8')) as Row;
    const h = await startDashboard({ runDir: root, port: 0 });
    try {
      const { page, errors } = await openPage(browser, h.url);
      assert.deepEqual(await page.locator('.run').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-run'))), ['demo', 'eval']);
      assert.equal((await heldOutRow(page, '.baseline'))[3], f3(results.metrics.avgReward));
      assert.equal(await page.locator('figure[data-chart="heldout-step"] line.ref').count(), 1, 'the eval as a reference line');
      assert.match((await page.locator('figure[data-chart="heldout-step"] .legend').textContent())!, /eval · eval \(checkpoint:model\)/);
      assert.deepEqual(errors, []);
    } finally {
      await h.close();
    }
  });
});

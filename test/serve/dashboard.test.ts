import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startDashboard, type DashboardHandle } from '../../src/serve/dashboard/server.ts';
import { api } from './helpers.ts';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));

const XSS = '<img src=x onerror="window.__xss=1">';

function writeRun(dir: string): void {
  const metrics = [];
  for (let step = 1; step <= 5; step++) metrics.push({ kind: 'train', step, 'reward/mean': step / 10, 'actor/grad_norm': 1 / step });
  metrics.push({ kind: 'val', step: 5, 'val/pass^1': 0.4 });
  writeFileSync(join(dir, 'metrics.jsonl'), metrics.map((m) => JSON.stringify(m)).join('\n') + '\n');
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

describe('longrun dashboard', () => {
  let dir: string;
  let h: DashboardHandle;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-dash-'));
    writeRun(dir);
    h = await startDashboard({ runDir: dir, port: 0 });
  });
  after(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves the run files, metric series and trajectories; never a path from the client', async () => {
    const run = await api(h.url, 'GET', '/api/run');
    assert.deepEqual(run.body.metrics, ['metrics.jsonl']);
    assert.deepEqual(run.body.trajectories, ['trajectories.jsonl']);
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
    assert.equal((await api(h.url, 'GET', '/api/metrics')).status, 400);
    assert.equal((await api(h.url, 'POST', '/api/run', {})).status, 405);
  });

  it('renders curves and the trajectory viewer in headless Chromium, with data shown as text', { skip: CHROMIUM ? false : 'Debian chromium is not installed (apt-get install chromium)' }, async () => {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(h.url, { timeout: 20_000 });
      await page.waitForSelector('body[data-ready="true"]', { timeout: 20_000 });
      assert.equal(await page.locator('.chart').count(), 3);
      assert.equal(await page.locator('.chart[data-key="train/reward/mean"] polyline').count(), 1);
      const points = await page.locator('.chart[data-key="train/reward/mean"] polyline').getAttribute('points');
      assert.equal(points!.split(' ').length, 5);
      assert.match((await page.locator('#trajStats').textContent())!, /2 episodes, mean reward 1, 1 unreadable line/);
      await page.locator('tr.traj').first().click();
      await page.waitForSelector('#viewer .msg');
      assert.equal(await page.locator('#viewer .msg').count(), 4);
      assert.match((await page.locator('#viewer .call').first().textContent())!, /find_user_id_by_email\(\{"email":"a@b.c"\}\)/);
      assert.equal(await page.locator('#viewer .msg.error').count(), 1);
      // The injected markup is text, not an element.
      assert.ok((await page.locator('#viewer').textContent())!.includes(XSS));
      assert.equal(await page.locator('#viewer img').count(), 0);
      assert.equal(await page.evaluate(() => (globalThis as { __xss?: number }).__xss), undefined);
      await page.locator('tr.traj').nth(1).click();
      await page.locator('#viewer', { hasText: 'LLM down' }).waitFor({ timeout: 10_000 });
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
    }
  });
});

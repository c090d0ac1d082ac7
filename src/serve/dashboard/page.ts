/**
 * The dashboard page: one HTML document with its own small script (no framework, no external requests). It draws
 * every metric series as an SVG line chart and lists trajectories; clicking one shows its messages (text, tool calls
 * with arguments, tool results, errors highlighted). All data is inserted with textContent, never as HTML.
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>longrun dashboard</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
  header { padding: 10px 16px; background: #1d2330; color: #fff; display: flex; gap: 16px; align-items: baseline; }
  header h1 { font-size: 16px; margin: 0; }
  main { padding: 12px 16px; }
  section { margin-bottom: 20px; }
  h2 { font-size: 15px; margin: 8px 0; }
  .charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(300px, 1fr)); gap: 10px; }
  .chart { background: #fff; border: 1px solid #dde1e8; border-radius: 6px; padding: 6px 8px; }
  .chart .title { font-weight: 600; font-size: 12px; display: flex; justify-content: space-between; }
  .chart svg { width: 100%; height: 120px; }
  .chart polyline { fill: none; stroke: #2f6fde; stroke-width: 1.5; }
  .axis { font-size: 10px; fill: #6b7385; }
  .layout { display: grid; grid-template-columns: 380px 1fr; gap: 12px; }
  table { border-collapse: collapse; width: 100%; background: #fff; font-size: 12px; }
  th, td { border-bottom: 1px solid #e6e9ef; padding: 4px 6px; text-align: left; }
  tr.traj { cursor: pointer; } tr.traj:hover { background: #eef3fd; } tr.selected { background: #dbe7fc; }
  .list { max-height: 70vh; overflow: auto; border: 1px solid #dde1e8; border-radius: 6px; }
  .viewer { background: #fff; border: 1px solid #dde1e8; border-radius: 6px; padding: 8px; max-height: 70vh; overflow: auto; }
  .msg { margin: 6px 0; padding: 6px 8px; border-radius: 6px; white-space: pre-wrap; word-break: break-word; }
  .msg .role { font-weight: 600; font-size: 11px; text-transform: uppercase; color: #6b7385; display: block; }
  .assistant { background: #eef3fd; } .user { background: #f1f8ee; } .tool { background: #f7f4ec; font-family: ui-monospace, monospace; font-size: 12px; }
  .system { background: #f0f0f0; } .error { border-left: 3px solid #d33; }
  .call { font-family: ui-monospace, monospace; font-size: 12px; color: #6a3ea1; }
  .ok { color: #1b7f3b; } .bad { color: #b3261e; }
  select { font: inherit; }
  .empty { color: #6b7385; font-style: italic; }
</style>
</head>
<body>
<header><h1>longrun</h1><span id="run"></span></header>
<main>
  <section>
    <h2>Training curves <select id="metricsFile"></select></h2>
    <div id="charts" class="charts"></div>
  </section>
  <section>
    <h2>Trajectories <select id="trajFile"></select> <span id="trajStats"></span></h2>
    <div class="layout">
      <div class="list"><table><thead><tr><th>#</th><th>task</th><th>trial</th><th>reward</th><th>end</th></tr></thead><tbody id="trajList"></tbody></table></div>
      <div id="viewer" class="viewer"><span class="empty">Select a trajectory.</span></div>
    </div>
  </section>
</main>
<script>
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };
const svgEl = (tag, attrs) => { const e = document.createElementNS('http://www.w3.org/2000/svg', tag); for (const k in attrs) e.setAttribute(k, attrs[k]); return e; };
const fmt = (x) => Math.abs(x) >= 1000 || (Math.abs(x) > 0 && Math.abs(x) < 0.001) ? x.toExponential(2) : String(Math.round(x * 1000) / 1000);
async function get(path) { const r = await fetch(path); const body = await r.json(); if (!r.ok) throw new Error(body.error ? body.error.message : r.statusText); return body; }

function chart(series) {
  const box = el('div', 'chart');
  box.dataset.key = series.group + '/' + series.key;
  const last = series.points[series.points.length - 1];
  const title = el('div', 'title');
  title.append(el('span', '', series.group === 'all' ? series.key : series.group + ' · ' + series.key), el('span', '', last ? fmt(last[1]) : ''));
  box.append(title);
  const W = 300, H = 120, P = 28;
  const svg = svgEl('svg', { viewBox: '0 0 ' + W + ' ' + H, preserveAspectRatio: 'none' });
  const xs = series.points.map((p) => p[0]), ys = series.points.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys);
  const sx = (x) => P + (x1 === x0 ? 0.5 : (x - x0) / (x1 - x0)) * (W - P - 4);
  const sy = (y) => H - 14 - (y1 === y0 ? 0.5 : (y - y0) / (y1 - y0)) * (H - 22);
  svg.append(svgEl('polyline', { points: series.points.map((p) => sx(p[0]).toFixed(1) + ',' + sy(p[1]).toFixed(1)).join(' ') }));
  const t1 = svgEl('text', { x: 0, y: 10, class: 'axis' }); t1.textContent = fmt(y1);
  const t0 = svgEl('text', { x: 0, y: H - 14, class: 'axis' }); t0.textContent = fmt(y0);
  const tx = svgEl('text', { x: W - 4, y: H - 2, class: 'axis', 'text-anchor': 'end' }); tx.textContent = 'step ' + fmt(x1);
  svg.append(t1, t0, tx);
  box.append(svg);
  return box;
}

async function loadMetrics(file) {
  const target = document.getElementById('charts');
  target.replaceChildren();
  if (!file) { target.append(el('span', 'empty', 'No metrics file in this run folder.')); return; }
  const data = await get('/api/metrics?file=' + encodeURIComponent(file));
  if (!data.series.length) target.append(el('span', 'empty', 'No numeric metrics in ' + file + '.'));
  for (const s of data.series) target.append(chart(s));
}

function renderMessage(m) {
  const role = m.role || 'unknown';
  const box = el('div', 'msg ' + role + (m.error ? ' error' : ''));
  box.append(el('span', 'role', role + (m.error ? ' · error' : '')));
  if (m.content) box.append(document.createTextNode(m.content));
  const calls = m.toolCalls || m.tool_calls || [];
  for (const c of calls) {
    const name = c.name || (c.function && c.function.name) || '?';
    let args = c.arguments !== undefined ? c.arguments : (c.function && c.function.arguments);
    if (typeof args !== 'string') args = JSON.stringify(args);
    box.append(el('div', 'call', '→ ' + name + '(' + args + ')'));
  }
  return box;
}

async function showTrajectory(file, index, row) {
  document.querySelectorAll('tr.selected').forEach((r) => r.classList.remove('selected'));
  row.classList.add('selected');
  const viewer = document.getElementById('viewer');
  viewer.replaceChildren(el('span', 'empty', 'Loading…'));
  const t = await get('/api/trajectory?file=' + encodeURIComponent(file) + '&index=' + index);
  viewer.replaceChildren();
  const head = el('div', '', 'task ' + (t.taskId ?? '?') + ' · trial ' + (t.trial ?? '?') + ' · reward ');
  head.append(el('b', t.reward === 1 ? 'ok' : 'bad', String(t.reward)));
  head.append(document.createTextNode(' · ' + (t.terminationReason ?? t.status ?? '')));
  if (t.error) head.append(el('div', 'bad', t.error));
  viewer.append(head);
  for (const m of t.messages || []) viewer.append(renderMessage(m));
}

async function loadTrajectories(file) {
  const list = document.getElementById('trajList');
  list.replaceChildren();
  document.getElementById('trajStats').textContent = '';
  if (!file) { list.append(el('tr', '', '')).append(el('td', 'empty', 'No trajectories file in this run folder.')); return; }
  const data = await get('/api/trajectories?file=' + encodeURIComponent(file));
  const rewards = data.items.map((s) => s.reward).filter((r) => typeof r === 'number');
  document.getElementById('trajStats').textContent = data.items.length + ' episodes' + (rewards.length ? ', mean reward ' + fmt(rewards.reduce((a, b) => a + b, 0) / rewards.length) : '') + (data.skipped ? ', ' + data.skipped + ' unreadable line(s) skipped' : '');
  for (const s of data.items) {
    const tr = el('tr', 'traj');
    tr.dataset.index = s.index;
    tr.append(el('td', '', String(s.index)), el('td', '', s.taskId ?? ''), el('td', '', s.trial ?? ''), el('td', s.reward === 1 ? 'ok' : 'bad', s.reward ?? '-'), el('td', '', s.terminationReason ?? s.status ?? ''));
    tr.addEventListener('click', () => showTrajectory(file, s.index, tr).catch(showError));
    list.append(tr);
  }
}

function fill(select, names, onChange) {
  select.replaceChildren(...names.map((n) => { const o = el('option', '', n); o.value = n; return o; }));
  select.addEventListener('change', () => onChange(select.value).catch(showError));
  return onChange(names[0]);
}

function showError(err) { const b = el('div', 'msg error', String(err && err.message || err)); document.querySelector('main').prepend(b); }

(async () => {
  const run = await get('/api/run');
  document.getElementById('run').textContent = run.dir;
  await fill(document.getElementById('metricsFile'), run.metrics, loadMetrics);
  await fill(document.getElementById('trajFile'), run.trajectories, loadTrajectories);
  document.body.dataset.ready = 'true';
})().catch((e) => { showError(e); document.body.dataset.ready = 'error'; });
</script>
</body>
</html>
`;

/**
 * The dashboard page: one HTML document with its own small script (no framework, no external requests), drawn from
 * GET /api/overview (overview.ts). In order: the run's stages with their key numbers; the headline (held-out reward
 * by GRPO step and by wall time, ± 1 standard error, baselines beside it, the change before → after as text and a
 * table of every number); the training panels; every other metric behind a selector; the trajectory viewer, two
 * episode sets side by side matched by task and sample (by default the first and last validation: before and after
 * GRPO). Charts are SVG with labelled axes and units, each with its values as a table; all data is inserted with
 * textContent, never as HTML.
 */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>longrun dashboard</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
  :root { --ink: #1d2330; --muted: #5b6374; --line: #dde1e8; --bg: #f6f7f9; }
  body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: var(--ink); background: var(--bg); }
  header { padding: 10px 16px; background: var(--ink); color: #fff; display: flex; gap: 16px; align-items: baseline; flex-wrap: wrap; }
  header h1 { font-size: 17px; margin: 0; }
  header #run { font-family: ui-monospace, monospace; font-size: 13px; opacity: .9; }
  main { padding: 12px 16px; max-width: 1500px; }
  section { margin-bottom: 22px; }
  h2 { font-size: 16px; margin: 10px 0 8px; }
  h3 { font-size: 14px; margin: 8px 0 6px; }
  .muted { color: var(--muted); }
  .stages { display: flex; gap: 8px; flex-wrap: wrap; list-style: none; padding: 0; margin: 0; align-items: stretch; }
  .stage { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; min-width: 190px; position: relative; }
  .stage + .stage::before { content: '→'; position: absolute; left: -8px; top: 40%; color: var(--muted); font-size: 12px; }
  .stage .kind { font-size: 11px; font-weight: 700; text-transform: uppercase; letter-spacing: .04em; color: #fff; background: #5b6374; border-radius: 3px; padding: 0 5px; }
  .stage .kind.grpo { background: #2f6fde; } .stage .kind.rft { background: #8a4fd1; } .stage .kind.sft { background: #1b7f3b; } .stage .kind.eval { background: #b36b00; } .stage .kind.data { background: #00838f; }
  .stage .name { font-weight: 600; margin-left: 4px; }
  .stage dl { display: grid; grid-template-columns: auto auto; gap: 0 10px; margin: 4px 0 0; font-size: 12px; }
  .stage dt { color: var(--muted); } .stage dd { margin: 0; font-variant-numeric: tabular-nums; word-break: break-all; }
  #verdict { font-size: 15px; background: #fff; border: 1px solid var(--line); border-left: 4px solid #2f6fde; border-radius: 6px; padding: 8px 12px; margin: 0 0 10px; }
  .pair { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 10px; }
  .grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(400px, 1fr)); gap: 10px; }
  figure.chart { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 6px 8px; margin: 0; }
  figure.chart figcaption { font-weight: 600; font-size: 13px; }
  figure.chart .note { font-weight: 400; color: var(--muted); font-size: 12px; }
  figure.chart svg { width: 100%; height: auto; display: block; }
  .tick { font-size: 10px; fill: var(--muted); } .axis-label { font-size: 11px; fill: var(--ink); }
  .gridline { stroke: #eef0f4; } .frame { fill: none; stroke: #c9ced8; }
  .legend { list-style: none; padding: 0; margin: 2px 0; display: flex; flex-wrap: wrap; gap: 2px 12px; font-size: 12px; }
  .legend .swatch { display: inline-block; width: 18px; height: 0; border-top: 2px solid; vertical-align: middle; margin-right: 4px; }
  .legend .swatch.dashed { border-top-style: dashed; }
  details summary { cursor: pointer; color: var(--muted); font-size: 12px; }
  table { border-collapse: collapse; background: #fff; font-size: 12px; font-variant-numeric: tabular-nums; }
  th, td { border-bottom: 1px solid #e6e9ef; padding: 3px 7px; text-align: left; vertical-align: top; }
  td.num, th.num { text-align: right; }
  #heldout { width: 100%; margin-top: 8px; }
  .notes { font-size: 12px; color: var(--muted); }
  select { font: inherit; max-width: 100%; }
  .controls { display: flex; gap: 12px; flex-wrap: wrap; align-items: center; margin-bottom: 8px; }
  .viewer-layout { display: grid; grid-template-columns: minmax(280px, 360px) 1fr; gap: 10px; }
  .list { max-height: 78vh; overflow: auto; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
  .list table { width: 100%; }
  tr.traj { cursor: pointer; } tr.traj:hover { background: #eef3fd; } tr.selected { background: #dbe7fc; }
  tr.traj:focus { outline: 2px solid #2f6fde; outline-offset: -2px; }
  .panes { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; }
  .pane { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px; max-height: 78vh; overflow: auto; }
  .pane h3 { margin-top: 0; }
  .msg { margin: 6px 0; padding: 6px 8px; border-radius: 6px; white-space: pre-wrap; word-break: break-word; }
  .msg .role { font-weight: 600; font-size: 11px; text-transform: uppercase; color: var(--muted); display: block; }
  .assistant { background: #eef3fd; } .user { background: #f1f8ee; } .tool { background: #f7f4ec; font-family: ui-monospace, monospace; font-size: 12px; }
  .system { background: #f0f0f0; } .error { border-left: 3px solid #d33; }
  .reasoning { color: var(--muted); font-style: italic; display: block; }
  .call { font-family: ui-monospace, monospace; font-size: 12px; color: #6a3ea1; }
  .ok { color: #1b7f3b; font-weight: 600; } .bad { color: #b3261e; font-weight: 600; }
  .empty { color: var(--muted); font-style: italic; }
  #errors .msg { background: #fde8e7; }
</style>
</head>
<body>
<header><h1>longrun dashboard</h1><span id="run"></span><span id="runSummary"></span></header>
<main>
  <div id="errors" role="alert"></div>
  <section id="stagesSection" aria-labelledby="stagesTitle">
    <h2 id="stagesTitle">Stages</h2>
    <div id="stages"></div>
  </section>
  <section id="headline" aria-labelledby="headlineTitle">
    <h2 id="headlineTitle">Held-out reward: did RL make the agent better, and compared with what?</h2>
    <p id="verdict"></p>
    <div id="headlineCharts" class="pair"></div>
    <table id="heldout"><caption class="muted" style="text-align:left">Every held-out measurement (mean reward per task ± 1 standard error of the mean over tasks)</caption>
      <thead><tr><th scope="col">series</th><th scope="col" class="num">GRPO step</th><th scope="col" class="num">wall time</th><th scope="col" class="num">held-out reward</th><th scope="col" class="num">± s.e.</th><th scope="col" class="num">success</th><th scope="col" class="num">episodes</th></tr></thead>
      <tbody></tbody></table>
    <div id="headlineNotes" class="notes"></div>
  </section>
  <section id="training" aria-labelledby="trainingTitle">
    <h2 id="trainingTitle">Training</h2>
    <div id="panels" class="grid"></div>
  </section>
  <section id="tail" aria-labelledby="tailTitle">
    <h2 id="tailTitle">Every other metric</h2>
    <div class="controls"><label>metric <select id="tailSelect"></select></label></div>
    <div id="tailChart" class="grid"></div>
  </section>
  <section id="trajectories" aria-labelledby="trajTitle">
    <h2 id="trajTitle">Trajectories</h2>
    <div class="controls">
      <label>left <select id="setA"></select></label>
      <label>right <select id="setB"></select></label>
      <span id="trajStats" class="muted"></span>
    </div>
    <div class="viewer-layout">
      <div class="list"><table><thead><tr><th scope="col">task</th><th scope="col" class="num">sample</th><th scope="col" class="num">left</th><th scope="col" class="num">right</th></tr></thead><tbody id="trajList"></tbody></table></div>
      <div id="viewer" class="panes"><div class="pane" id="paneA"><span class="empty">Select a task.</span></div><div class="pane" id="paneB"></div></div>
    </div>
  </section>
</main>
<script>
const PALETTE = ['#2f6fde', '#d1495b', '#1b7f3b', '#8a4fd1', '#e08a00', '#00838f', '#8c564b', '#c2185b'];
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined && text !== null) e.textContent = text; return e; };
const svgEl = (tag, attrs) => { const e = document.createElementNS('http://www.w3.org/2000/svg', tag); for (const k in attrs) e.setAttribute(k, attrs[k]); return e; };
const fmt = (x) => { if (x === null || x === undefined || !Number.isFinite(x)) return '–'; const a = Math.abs(x); if (a !== 0 && (a >= 1e5 || a < 1e-3)) return x.toExponential(2); if (a >= 100) return String(Math.round(x * 10) / 10); return x.toFixed(3); };
const tick = (x) => { const s = fmt(x); return s.includes('.') && !s.includes('e') ? s.replace(/0+$/, '').replace(/\\.$/, '') : s; };
const f3 = (x) => (x === null || x === undefined ? '–' : x.toFixed(3));
async function get(path) { const r = await fetch(path); const body = await r.json(); if (!r.ok) throw new Error(body.error ? body.error.message : r.statusText); return body; }
function showError(err) { document.getElementById('errors').append(el('div', 'msg error', String((err && err.message) || err))); }
function fmtSeconds(s) { if (s === null || s === undefined) return '–'; if (s >= 7200) return (s / 3600).toFixed(1) + ' h'; if (s >= 120) return (s / 60).toFixed(1) + ' min'; return s.toFixed(1) + ' s'; }

function niceTicks(lo, hi, count) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count, mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** A chart spec from the server (overview.ts Chart) as a figure: SVG with axes and labels, a legend, and its values as a table. */
function renderChart(c, width) {
  const fig = el('figure', 'chart');
  fig.dataset.chart = c.id;
  const cap = el('figcaption', '', c.title);
  if (c.note) cap.append(el('span', 'note', ' (' + c.note + ')'));
  fig.append(cap);
  const W = width || 460, H = Math.round(W * 0.46), m = { l: 58, r: 14, t: 10, b: 44 };
  const pw = W - m.l - m.r, ph = H - m.t - m.b;
  const refs = c.references || [];
  const xs = c.series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = c.series.flatMap((s) => s.points.map((p) => p[1]).concat((s.band || []).flatMap((b) => [b[1], b[2]]))).concat(refs.flatMap((r) => [r.y - (r.se || 0), r.y + (r.se || 0)]));
  let x0 = xs.length ? Math.min(...xs) : 0, x1 = xs.length ? Math.max(...xs) : 1;
  if (x1 === x0) { x0 -= 1; x1 += 1; }
  let y0, y1;
  if (c.yRange) { y0 = c.yRange[0]; y1 = c.yRange[1]; if (ys.length) { y0 = Math.min(y0, ...ys); y1 = Math.max(y1, ...ys); } }
  else { y0 = Math.min(0, ...ys); y1 = ys.length ? Math.max(...ys) : 1; y1 += (y1 - y0) * 0.06; if (y1 === y0) y1 = y0 + 1; }
  const sx = (x) => m.l + ((x - x0) / (x1 - x0)) * pw, sy = (y) => m.t + ph - ((y - y0) / (y1 - y0)) * ph;
  const svg = svgEl('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': c.title + ': ' + c.yLabel + ' against ' + c.xLabel + '; values in the table below' });
  for (const t of niceTicks(y0, y1, 5)) {
    svg.append(svgEl('line', { x1: m.l, x2: m.l + pw, y1: sy(t), y2: sy(t), class: 'gridline' }));
    const tx = svgEl('text', { x: m.l - 5, y: sy(t) + 3, 'text-anchor': 'end', class: 'tick' }); tx.textContent = tick(t); svg.append(tx);
  }
  const xt = niceTicks(x0, x1, 6).filter((t) => xs.every((x) => Number.isInteger(x)) ? Number.isInteger(t) : true);
  for (const t of xt) {
    svg.append(svgEl('line', { x1: sx(t), x2: sx(t), y1: m.t + ph, y2: m.t + ph + 4, stroke: '#9aa1ae' }));
    const tx = svgEl('text', { x: sx(t), y: m.t + ph + 15, 'text-anchor': 'middle', class: 'tick' }); tx.textContent = tick(t); svg.append(tx);
  }
  svg.append(svgEl('rect', { x: m.l, y: m.t, width: pw, height: ph, class: 'frame' }));
  const xl = svgEl('text', { x: m.l + pw / 2, y: H - 6, 'text-anchor': 'middle', class: 'axis-label' }); xl.textContent = c.xLabel; svg.append(xl);
  const yl = svgEl('text', { x: 12, y: m.t + ph / 2, 'text-anchor': 'middle', class: 'axis-label', transform: 'rotate(-90 12 ' + (m.t + ph / 2) + ')' }); yl.textContent = c.yLabel; svg.append(yl);
  const legend = el('ul', 'legend');
  refs.forEach((r, i) => {
    const color = '#7a7f8c';
    if (r.se) svg.append(svgEl('rect', { x: m.l, width: pw, y: sy(r.y + r.se), height: Math.max(0.5, sy(r.y - r.se) - sy(r.y + r.se)), fill: color, 'fill-opacity': 0.12, class: 'ref-band' }));
    svg.append(svgEl('line', { x1: m.l, x2: m.l + pw, y1: sy(r.y), y2: sy(r.y), stroke: color, 'stroke-width': 1.5, 'stroke-dasharray': i % 2 ? '2 3' : '7 4', class: 'ref' }));
    const li = el('li'); const sw = el('span', 'swatch dashed'); sw.style.borderTopColor = color; li.append(sw, document.createTextNode(r.name + ' ' + f3(r.y) + (r.se !== null ? ' ± ' + f3(r.se) : ''))); legend.append(li);
  });
  c.series.forEach((s, i) => {
    const color = PALETTE[i % PALETTE.length];
    if (s.band && s.band.length) {
      const up = s.band.map((b) => sx(b[0]).toFixed(1) + ',' + sy(b[2]).toFixed(1)), down = s.band.slice().reverse().map((b) => sx(b[0]).toFixed(1) + ',' + sy(b[1]).toFixed(1));
      if (s.band.length > 1) svg.append(svgEl('polygon', { points: up.concat(down).join(' '), fill: color, 'fill-opacity': 0.15, class: 'band' }));
      else svg.append(svgEl('line', { x1: sx(s.band[0][0]), x2: sx(s.band[0][0]), y1: sy(s.band[0][1]), y2: sy(s.band[0][2]), stroke: color, 'stroke-width': 3, 'stroke-opacity': 0.35, class: 'band' }));
    }
    const attrs = { points: s.points.map((p) => sx(p[0]).toFixed(1) + ',' + sy(p[1]).toFixed(1)).join(' '), fill: 'none', stroke: color, 'stroke-width': 1.8, 'data-series': s.name };
    if (s.dashed) attrs['stroke-dasharray'] = '5 3';
    svg.append(svgEl('polyline', attrs));
    if (s.points.length <= 60) for (const p of s.points) {
      const dot = svgEl('circle', { cx: sx(p[0]).toFixed(1), cy: sy(p[1]).toFixed(1), r: 2.6, fill: color });
      const t = svgEl('title', {}); t.textContent = s.name + ' · ' + c.xLabel + ' ' + fmt(p[0]) + ': ' + fmt(p[1]); dot.append(t); svg.append(dot);
    }
    const li = el('li'); const sw = el('span', 'swatch' + (s.dashed ? ' dashed' : '')); sw.style.borderTopColor = color; li.append(sw, document.createTextNode(s.name)); legend.append(li);
  });
  if (!c.series.length) { const t = svgEl('text', { x: m.l + pw / 2, y: m.t + ph / 2, 'text-anchor': 'middle', class: 'tick' }); t.textContent = 'no points yet'; svg.append(t); }
  fig.append(svg, legend);
  // The values as text: one row per x, one column per series.
  const details = el('details'); details.append(el('summary', '', 'values'));
  const table = el('table', 'values');
  const head = el('tr'); head.append(el('th', '', c.xLabel)); for (const s of c.series) head.append(el('th', 'num', s.name + (s.band ? ' (± s.e.)' : '')));
  table.append(el('thead')); table.tHead.append(head);
  const body = el('tbody');
  const allX = [...new Set(xs)].sort((a, b) => a - b);
  for (const x of allX) {
    const tr = el('tr'); tr.append(el('td', 'num', tick(x)));
    for (const s of c.series) {
      const i = s.points.findIndex((p) => p[0] === x);
      const b = s.band && i >= 0 ? s.band[i] : null;
      tr.append(el('td', 'num', i >= 0 ? fmt(s.points[i][1]) + (b ? ' ± ' + fmt((b[2] - b[1]) / 2) : '') : ''));
    }
    body.append(tr);
  }
  table.append(body); details.append(table); fig.append(details);
  return fig;
}

function renderStages(ov) {
  const target = document.getElementById('stages');
  target.replaceChildren();
  for (const run of ov.runs) {
    const box = el('div', 'run');
    box.dataset.run = run.name;
    if (ov.runs.length > 1 || run.name) box.append(el('h3', '', run.name || ov.dir));
    const ol = el('ol', 'stages');
    for (const s of run.stages) {
      const li = el('li', 'stage');
      li.dataset.stage = s.name; li.dataset.kind = s.kind;
      li.append(el('span', 'kind ' + s.kind, s.kind), el('span', 'name', s.name));
      const dl = el('dl');
      for (const [k, v] of s.facts) dl.append(el('dt', '', k), el('dd', '', v));
      li.append(dl); ol.append(li);
    }
    box.append(ol); target.append(box);
    if (run.summary) document.getElementById('runSummary').textContent = 'demo' + (run.summary.quick ? ' --quick' : '') + ', seed ' + run.summary.seed + ', ' + fmtSeconds(run.summary.wallSeconds) + ' wall';
  }
  if (!ov.runs.length) target.append(el('p', 'empty', 'No run files found in this folder (metrics.jsonl, episodes.jsonl, trajectories.jsonl, results.json), nor in its sub-folders.'));
}

function renderHeadline(ov) {
  const h = ov.headline;
  const verdict = document.getElementById('verdict');
  verdict.replaceChildren();
  if (h.change) {
    const c = h.change;
    verdict.dataset.before = c.before.reward; verdict.dataset.after = c.after.reward; verdict.dataset.delta = c.delta;
    verdict.append(document.createTextNode('Held-out reward (' + c.arm + '): '));
    verdict.append(el('b', 'before', f3(c.before.reward) + (c.before.se !== null ? ' ± ' + f3(c.before.se) : '')));
    verdict.append(document.createTextNode(' at step ' + c.before.step + (c.before.step === 0 ? ' (before RL)' : '') + ' → '));
    verdict.append(el('b', 'after', f3(c.after.reward) + (c.after.se !== null ? ' ± ' + f3(c.after.se) : '')));
    verdict.append(document.createTextNode(' at step ' + c.after.step + (c.after.wallS !== null ? ' (' + fmtSeconds(c.after.wallS) + ' of training steps)' : '') + '; change '));
    verdict.append(el('b', 'delta ' + (c.delta > 0 ? 'ok' : c.delta < 0 ? 'bad' : ''), (c.delta >= 0 ? '+' : '') + f3(c.delta) + (c.se !== null ? ' ± ' + f3(c.se) : '')));
    verdict.append(document.createTextNode(c.paired ? ' (standard error paired over ' + c.tasks + ' tasks)' : ' (standard errors combined, unpaired)'));
  } else if (h.arms.length) verdict.textContent = 'One validation so far: the change before → after RL needs a second one.';
  else if (h.baselines.length) verdict.textContent = 'No GRPO stage in this folder; the held-out measurements below are from longrun eval.';
  else verdict.textContent = 'No held-out measurement in this folder yet (GRPO validation rows or a longrun eval results.json).';
  const charts = document.getElementById('headlineCharts');
  charts.replaceChildren(...h.charts.map((c) => renderChart(c, 620)));
  const tbody = document.querySelector('#heldout tbody');
  tbody.replaceChildren();
  for (const a of h.arms) for (const p of a.points) {
    const tr = el('tr'); tr.dataset.arm = a.id; tr.dataset.step = p.step;
    tr.append(el('td', '', a.label), el('td', 'num', String(p.step)), el('td', 'num', fmtSeconds(p.wallS)), el('td', 'num reward', f3(p.reward)), el('td', 'num se', f3(p.se)), el('td', 'num', f3(p.success)), el('td', 'num', p.episodes === null ? '–' : p.episodes + (p.tasks ? ' (' + p.tasks + ' tasks)' : '')));
    tbody.append(tr);
  }
  for (const b of h.baselines) {
    const tr = el('tr', 'baseline'); tr.dataset.baseline = b.id;
    tr.append(el('td', '', b.label), el('td', 'num', '–'), el('td', 'num', '–'), el('td', 'num reward', f3(b.reward)), el('td', 'num se', f3(b.se)), el('td', 'num', f3(b.success)), el('td', 'num', b.episodes === null ? '–' : b.episodes + (b.tasks ? ' (' + b.tasks + ' tasks × ' + (b.trials ?? '?') + ')' : '')));
    tbody.append(tr);
  }
  if (!tbody.children.length) { const tr = el('tr'); const td = el('td', 'empty', 'no held-out measurement'); td.colSpan = 7; tr.append(td); tbody.append(tr); }
  const notes = document.getElementById('headlineNotes');
  notes.replaceChildren(...h.notes.map((n) => el('p', '', n)));
  if (!h.baselines.length && h.arms.length) notes.append(el('p', '', 'Baselines appear here when this folder (or a sibling run in a folder of runs) holds them: a longrun eval --out folder, an RFT run (algorithm.advEstimator: rft), continued SFT measured with longrun eval.'));
}

const stageKindOf = new Map();
function renderTail(ov) {
  for (const run of ov.layout.runs) for (const s of run.stages) if (s.metrics) stageKindOf.set(s.metrics, s.kind);
  const select = document.getElementById('tailSelect');
  select.replaceChildren();
  const byFile = new Map();
  for (const t of ov.tail) { if (!byFile.has(t.file)) byFile.set(t.file, []); byFile.get(t.file).push(t); }
  for (const [file, items] of byFile) {
    const g = el('optgroup'); g.label = file;
    for (const t of items) { const o = el('option', '', t.group + ' · ' + t.key); o.value = JSON.stringify([t.file, t.group, t.key]); g.append(o); }
    select.append(g);
  }
  const preferred = ['actor/grad_norm', 'actor/entropy', 'gradNorm'];
  for (const k of preferred) { const t = ov.tail.find((x) => x.key === k); if (t) { select.value = JSON.stringify([t.file, t.group, t.key]); break; } }
  const cache = new Map();
  const show = async () => {
    const target = document.getElementById('tailChart');
    if (!select.value) { target.replaceChildren(el('span', 'empty', 'No metrics file in this folder.')); return; }
    const [file, group, key] = JSON.parse(select.value);
    if (!cache.has(file)) cache.set(file, get('/api/metrics?file=' + encodeURIComponent(file)));
    const data = await cache.get(file);
    const s = data.series.find((x) => x.group === group && x.key === key);
    const kind = stageKindOf.get(file);
    const xLabel = kind === 'sft' ? 'SFT step' : kind === 'grpo' || kind === 'rft' ? 'GRPO step' : 'step';
    target.replaceChildren(renderChart({ id: 'tail', title: file + ' · ' + group + ' · ' + key, xLabel, yLabel: key + ' (as logged)', series: s ? [{ name: group + ' · ' + key, points: s.points }] : [] }));
  };
  select.addEventListener('change', () => show().catch(showError));
  return show();
}

function renderMessage(m) {
  const role = m.role || 'unknown';
  const isError = m.error === true || (role === 'tool' && typeof m.content === 'string' && m.content.startsWith('Error'));
  const box = el('div', 'msg ' + role + (isError ? ' error' : ''));
  box.append(el('span', 'role', role + (m.name ? ' · ' + m.name : '') + (isError ? ' · error' : '')));
  if (m.reasoning) box.append(el('span', 'reasoning', m.reasoning));
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

/** Rewards of a set all in [0, 1]: reward 1 is a success (green), anything less is not (red); other scales stay uncoloured. */
const unitRewards = (items) => items.every((s) => typeof s.reward !== 'number' || (s.reward >= 0 && s.reward <= 1));
const rewardClass = (r, unit) => (unit ? (r === 1 ? 'ok' : 'bad') : 'plain');

async function fillPane(pane, set, item, unit = true) {
  pane.replaceChildren();
  if (!set) return;
  pane.append(el('h3', '', set.label));
  if (!item) { pane.append(el('p', 'empty', 'This task has no episode in this set.')); return; }
  pane.append(el('span', 'empty', 'Loading…'));
  const t = await get('/api/trajectory?file=' + encodeURIComponent(set.file) + '&index=' + item.index);
  pane.lastChild.remove();
  const head = el('div', 'head', 'task ' + (t.taskId ?? '?') + ' · sample ' + (t.trial ?? t.sample ?? '?') + ' · reward ');
  head.append(el('b', rewardClass(t.reward, unit && unitRewards([t])), String(t.reward)));
  head.append(document.createTextNode(' · ' + (t.terminationReason ?? t.termination ?? t.status ?? '') + (typeof t.turns === 'number' ? ' · ' + t.turns + ' turns' : '') + (typeof t.toolCalls === 'number' ? ' · ' + t.toolCalls + ' tool calls (' + t.toolErrors + ' failed)' : '') + (typeof t.parseErrors === 'number' ? ' · ' + t.parseErrors + ' unparsed turns' : '')));
  if (t.error) head.append(el('div', 'bad', t.error));
  pane.append(head);
  if (typeof t.systemPromptChars === 'number') pane.append(el('p', 'muted', '(system prompt, ' + t.systemPromptChars + ' characters, not recorded)'));
  if (!Array.isArray(t.messages)) pane.append(el('p', 'empty', 'No conversation recorded for this episode (the trainer keeps it for the first samples of each validation task and the first group of each training step: trainer.episodeTranscripts).'));
  for (const m of t.messages || []) pane.append(renderMessage(m));
  if (t.messagesCut || t.charsCut) pane.append(el('p', 'muted', '… cut at the record\\'s size bound: ' + (t.charsCut || 0) + ' characters' + (t.messagesCut ? ', ' + t.messagesCut + ' later messages' : '') + ' not recorded'));
}

const keyOf = (s) => (s.taskId ?? '?') + '#' + (s.trial ?? 0);
function defaultSets(sets) {
  const val = sets.filter((s) => s.kind === 'val');
  if (val.length >= 2) {
    const first = val[0], last = val.filter((s) => s.file === first.file).at(-1);
    if (last && last !== first) return [first, last];
  }
  const evals = sets.filter((s) => s.kind === undefined);
  if (val.length && evals.length) return [val.at(-1), evals[0]];
  return [sets[0], sets[1]];
}

function renderTrajectories(ov) {
  const sets = ov.episodeSets;
  const a = document.getElementById('setA'), b = document.getElementById('setB');
  const option = (s, i) => { const o = el('option', '', s.label + ' — ' + s.episodes + ' episodes' + (s.withMessages < s.episodes ? ', ' + s.withMessages + ' with conversation' : '')); o.value = String(i); return o; };
  a.replaceChildren(...sets.map(option));
  const none = el('option', '', '(none)'); none.value = '';
  b.replaceChildren(none, ...sets.map(option));
  const [da, db] = defaultSets(sets);
  if (da) a.value = String(sets.indexOf(da));
  if (db) b.value = String(sets.indexOf(db));
  const list = document.getElementById('trajList');
  const load = async () => {
    list.replaceChildren();
    document.getElementById('paneA').replaceChildren(el('span', 'empty', 'Select a task.'));
    document.getElementById('paneB').replaceChildren();
    const sa = sets[Number(a.value)], sb = b.value === '' ? null : sets[Number(b.value)];
    if (!sa) { const tr = el('tr'); const td = el('td', 'empty', 'No per-episode file in this folder (GRPO episodes.jsonl, eval trajectories.jsonl).'); td.colSpan = 4; tr.append(td); list.append(tr); return; }
    const [ia, ib] = await Promise.all([get('/api/trajectories?set=' + encodeURIComponent(sa.id)), sb ? get('/api/trajectories?set=' + encodeURIComponent(sb.id)) : Promise.resolve({ items: [], skipped: 0 })]);
    const mapA = new Map(ia.items.map((s) => [keyOf(s), s])), mapB = new Map(ib.items.map((s) => [keyOf(s), s]));
    const keys = [...new Set([...mapA.keys(), ...mapB.keys()])];
    const mean = (xs) => { const r = xs.map((s) => s.reward).filter((x) => typeof x === 'number'); return r.length ? r.reduce((p, q) => p + q, 0) / r.length : null; };
    document.getElementById('trajStats').textContent = 'left: ' + ia.items.length + ' episodes, mean reward ' + f3(mean(ia.items)) + (sb ? '; right: ' + ib.items.length + ' episodes, mean reward ' + f3(mean(ib.items)) : '') + (ia.skipped + ib.skipped ? '; ' + (ia.skipped + ib.skipped) + ' unreadable line(s) skipped' : '');
    const unit = unitRewards(ia.items.concat(ib.items));
    let firstRow = null, firstWithBoth = null;
    for (const k of keys) {
      const ea = mapA.get(k), eb = mapB.get(k);
      const any = ea || eb;
      const tr = el('tr', 'traj'); tr.tabIndex = 0; tr.dataset.key = k;
      const cell = (e) => el('td', 'num ' + (e ? rewardClass(e.reward, unit) : ''), e ? (e.reward ?? '–') + (e.hasMessages === false ? ' ·' : '') : '');
      tr.append(el('td', '', any.taskId ?? ''), el('td', 'num', String(any.trial ?? '')), cell(ea), cell(eb));
      const open = () => {
        document.querySelectorAll('tr.selected').forEach((r) => r.classList.remove('selected'));
        tr.classList.add('selected');
        return Promise.all([fillPane(document.getElementById('paneA'), sa, ea, unit), fillPane(document.getElementById('paneB'), sb, eb, unit)]).catch(showError);
      };
      tr.addEventListener('click', open);
      tr.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); open(); } });
      list.append(tr);
      firstRow ||= open;
      if (!firstWithBoth && ea && ea.hasMessages !== false && (!sb || (eb && eb.hasMessages !== false))) firstWithBoth = open;
    }
    const first = firstWithBoth || firstRow;
    if (first) await first();
  };
  a.addEventListener('change', () => load().catch(showError));
  b.addEventListener('change', () => load().catch(showError));
  return load();
}

(async () => {
  const ov = await get('/api/overview');
  document.getElementById('run').textContent = ov.dir;
  renderStages(ov);
  renderHeadline(ov);
  const panels = document.getElementById('panels');
  panels.replaceChildren(...ov.panels.map((c) => renderChart(c)));
  if (!ov.panels.length) panels.append(el('span', 'empty', 'No training metrics in this folder.'));
  await renderTail(ov);
  await renderTrajectories(ov);
  document.body.dataset.ready = 'true';
})().catch((e) => { showError(e); document.body.dataset.ready = 'error'; });
</script>
</body>
</html>
`;

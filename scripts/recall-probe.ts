/**
 * Recall probe: can a checkpoint, or a reshaped copy of it, learn to find an id by the name printed before it?
 *
 * The families that stay at 0 (exchange, modify_items) need the agent to write an item's product id after its name,
 * copied from order details read earlier, where every id follows the same JSON key and only the name some tokens back
 * tells the items apart (docs/results/retail-grpo/README.md, "The item walk"). This probe isolates that copy on short
 * documents and fine-tunes on it densely, so shapes can be compared in minutes instead of a pretraining each:
 *
 *   get_order_details("#W…"): {…the retail tool's real output…}      (2–4 orders of one world, 1–5 items each)
 *   …
 *   note:
 *   {"name": "Skateboard", "product_id": "6129833754"}              (3–6 of the items read, in a random order)
 *
 * The loss is on each note line from its product id on; the measure, on 48 documents of a world no step trains on, is
 * the probability of each id's first digit group (the token that chooses the item; the later groups follow by
 * ordinary copying): its median, the share above 0.5 (what greedy decoding would write correctly), and the median
 * probability mass on the first groups of all the product ids the document prints (copying some id, right or wrong).
 * `--passes 2` names the items a second time in another order, so those ids are also a few lines back in the note
 * (reported apart: "repeated ids"); `--orders LO-HI` sets how many orders a training document reads (the held-out
 * documents always read 2–4); `--show N` prints the first N held-out ids with the model's three likeliest tokens.
 *
 * Reshapes of the checkpoint, each the same function at step 0 unless noted:
 *   --theta X        RoPE base (changes the function: every rotation but the first pair's)
 *   --no-yarn        drop the YaRN scaling (changes the function)
 *   --layers sfsf    layer types, s = sliding, f = full (changes the function where a sliding layer turns full)
 *   --add-global N   N full-attention layers inserted after layer `--add-at` (default: the last), with zero output
 *                    projections (attention o_proj and the experts' down projections), so the function is unchanged
 *
 *   node --import tsx scripts/recall-probe.ts --checkpoint models/retail-pretrain-v3-stage3 [--steps 150] [--lr 1e-3]
 *     [--rows 4] [--seq 2048] [--theta X] [--no-yarn] [--layers sfsf] [--add-global N] [--add-at K] [--eval-every 25]
 *     [--passes 1] [--orders 2-4] [--show N] [--seed 1] [--eval-docs 48] [--tokenizer models/retail-pretrain-v3/tokenizer.json]
 */
import { parseArgs } from 'node:util';
import { clipGradNorm } from '../src/engine/index.ts';
import { validateConfig, type GptOssConfig, type LayerType } from '../src/model/config.ts';
import { GptOssModel } from '../src/model/model.ts';
import { layerPrefix } from '../src/model/params.ts';
import { loadCheckpoint } from '../src/model/checkpoint/hf.ts';
import { loadTokenizer } from '../src/llm/load-tokenizer.ts';
import { generateWorld } from '../src/domains/retail/synth/world.ts';
import { RetailBase, type RetailDb } from '../src/domains/retail/db.ts';
import { getOrderDetailsTool } from '../src/domains/retail/tools/read-tools.ts';
import { SynthRng } from '../src/domains/retail/synth/rng.ts';

const { values: a } = parseArgs({
  options: {
    checkpoint: { type: 'string', default: 'models/retail-pretrain-v3-stage3' },
    tokenizer: { type: 'string', default: 'models/retail-pretrain-v3/tokenizer.json' },
    steps: { type: 'string', default: '150' }, lr: { type: 'string', default: '1e-3' },
    rows: { type: 'string', default: '4' }, seq: { type: 'string', default: '2048' },
    theta: { type: 'string' }, 'no-yarn': { type: 'boolean', default: false }, layers: { type: 'string' },
    'add-global': { type: 'string', default: '0' }, 'add-at': { type: 'string' },
    'eval-every': { type: 'string', default: '25' }, passes: { type: 'string', default: '1' }, orders: { type: 'string', default: '2-4' }, show: { type: 'string', default: '0' }, 'eval-docs': { type: 'string', default: '48' }, seed: { type: 'string', default: '1' },
  },
});
const int = (name: string, v: string | undefined, min: number): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}, got ${v}`);
  return n;
};
const steps = int('steps', a.steps, 0), rows = int('rows', a.rows, 1), T = int('seq', a.seq, 256);
const evalEvery = int('eval-every', a['eval-every'], 1), evalDocs = int('eval-docs', a['eval-docs'], 1), seed = int('seed', a.seed, 0);
const addGlobal = int('add-global', a['add-global'], 0), passes = int('passes', a.passes, 1);
const lr = Number(a.lr);
const om = /^(\d+)-(\d+)$/.exec(a.orders!);
if (!om || Number(om[1]) < 1 || Number(om[2]) < Number(om[1])) throw new Error(`--orders must be LO-HI with 1 ≤ LO ≤ HI, got ${a.orders}`);
const trainOrders: [number, number] = [Number(om[1]), Number(om[2])];
if (!(lr > 0)) throw new Error(`--lr must be > 0, got ${a.lr}`);

// ---- the model, reshaped -------------------------------------------------------------------------------------------
const ckpt = loadCheckpoint(a.checkpoint!);
const old = ckpt.config;
const addAt = a['add-at'] === undefined ? old.num_hidden_layers - 1 : int('add-at', a['add-at'], 0);
if (addAt >= old.num_hidden_layers) throw new Error(`--add-at must name a layer of the checkpoint (0–${old.num_hidden_layers - 1}), got ${addAt}`);
// layer i of the result continues old layer from[i], or is new (-1)
const from: number[] = [];
for (let i = 0; i < old.num_hidden_layers; i++) {
  from.push(i);
  if (i === addAt) for (let k = 0; k < addGlobal; k++) from.push(-1);
}
let types: LayerType[] = from.map((f) => (f < 0 ? 'full_attention' : old.layer_types[f]!));
if (a.layers !== undefined) {
  if (!/^[sf]+$/.test(a.layers) || a.layers.length !== from.length) throw new Error(`--layers must be ${from.length} letters of s (sliding) and f (full), got ${a.layers}`);
  types = [...a.layers].map((c) => (c === 's' ? 'sliding_attention' : 'full_attention'));
}
const theta = a.theta === undefined ? old.rope_theta : Number(a.theta);
if (!(theta > 0)) throw new Error(`--theta must be > 0, got ${a.theta}`);
const config: GptOssConfig = validateConfig({
  ...old, num_hidden_layers: from.length, layer_types: types, rope_theta: theta, rope_scaling: a['no-yarn'] ? null : old.rope_scaling,
});
const model = new GptOssModel(config, { seed: 7 });
const layerOf = (name: string): [number, string] | null => {
  const m = /^model\.layers\.(\d+)\.(.*)$/.exec(name);
  return m ? [Number(m[1]), m[2]!] : null;
};
for (const [name, t] of model.parameters()) {
  const l = layerOf(name);
  const src = l === null ? name : from[l[0]]! >= 0 ? `${layerPrefix(from[l[0]]!)}.${l[1]}` : null;
  if (src !== null) {
    const p = ckpt.params.get(src);
    if (!p || p.data.length !== t.data().length) throw new Error(`checkpoint tensor ${src} is missing or has another size`);
    t.data().set(p.data);
  } else if (/(o_proj\.(weight|bias)|down_proj(_bias)?|sinks)$/.test(l![1])) {
    t.data().fill(0); // a new layer adds nothing until training moves its output projections
  }
}
const tok = loadTokenizer(a.tokenizer!);

// ---- documents -----------------------------------------------------------------------------------------------------
interface Doc {
  tokens: number[];
  /** loss from here to the end of each note line */
  spans: Array<[number, number]>;
  /** index of each id's first token */
  idStarts: number[];
  /** per id: named before in the note (a later pass), so also a few lines back */
  repeat: boolean[];
  /** the first tokens of the product ids the document's order details print (the candidates) */
  candidates: number[];
}

const worlds = new Map<number, { db: RetailDb; users: string[] }>();
function world(s: number): { db: RetailDb; users: string[] } {
  let w = worlds.get(s);
  if (!w) {
    const tables = generateWorld(s);
    w = { db: new RetailBase(tables).fresh(), users: [...tables.users.keys()] };
    worlds.set(s, w);
  }
  return w;
}

function makeDoc(rng: SynthRng, worldSeed: number, orders: [number, number]): Doc {
  const { db, users } = world(worldSeed);
  const orderIds: string[] = [];
  const want = rng.int(orders[0], orders[1]);
  while (orderIds.length < want) {
    const u = db.getUser(rng.pick(users))!;
    for (const o of u.orders) if (orderIds.length < want && !orderIds.includes(o)) orderIds.push(o);
  }
  const tokens: number[] = [];
  const items = new Map<string, string>(); // name → product id (an order's items of one product share both)
  for (const o of orderIds) {
    tokens.push(...tok.encode(`get_order_details("${o}"): ${getOrderDetailsTool.invoke(db, { order_id: o })}\n`));
    for (const it of db.getOrder(o)!.items) items.set(it.name, it.product_id);
  }
  const candidates = [...new Set([...items.values()].map((id) => tok.encode(id)[0]!))];
  tokens.push(...tok.encode('note:\n'));
  const drawn = rng.shuffle([...items.keys()]).slice(0, rng.int(3, 6));
  // with --passes 2 the note names the same items again in another order: each id of the second pass is also
  // a few lines back in the note itself, a nearer copy of the same kind
  const names = drawn.concat(...Array.from({ length: passes - 1 }, () => rng.shuffle(drawn)));
  const spans: Array<[number, number]> = [], idStarts: number[] = [], repeat: boolean[] = [];
  for (const [i, name] of names.entries()) {
    repeat.push(i >= drawn.length);
    tokens.push(...tok.encode(`{"name": "${name}", "product_id": "`));
    const start = tokens.length;
    tokens.push(...tok.encode(`${items.get(name)}"}\n`));
    spans.push([start, tokens.length]);
    idStarts.push(start);
  }
  return { tokens, spans, idStarts, repeat, candidates };
}

/** Rows of T tokens packed with whole documents (one at least; a document longer than T is cut). */
function batch(rng: SynthRng, worldSeeds: () => number, nRows: number, orders: [number, number] = [2, 4]): { docs: Array<{ doc: Doc; row: number; at: number; kept: number }>; tokens: Int32Array; targets: Int32Array; docIds: Int32Array; lossMask: Float32Array } {
  const tokens = new Int32Array(nRows * T), targets = new Int32Array(nRows * T).fill(-1), docIds = new Int32Array(nRows * T), lossMask = new Float32Array(nRows * T);
  const docs: Array<{ doc: Doc; row: number; at: number; kept: number }> = [];
  for (let r = 0; r < nRows; r++) {
    let at = 0, d = 0;
    for (;;) {
      const doc = makeDoc(rng, worldSeeds(), orders);
      if (at > 0 && at + doc.tokens.length > T) break;
      const n = Math.min(doc.tokens.length, T - at);
      for (let j = 0; j < n; j++) {
        tokens[r * T + at + j] = doc.tokens[j]!;
        docIds[r * T + at + j] = d;
        if (j + 1 < n) targets[r * T + at + j] = doc.tokens[j + 1]!;
      }
      // the loss on predicting each span's tokens: targets at positions start−1 … end−2
      for (const [s, e] of doc.spans) for (let j = s - 1; j < e - 1 && j + 1 < n; j++) lossMask[r * T + at + j] = 1;
      docs.push({ doc, row: r, at, kept: n });
      at += n;
      d++;
      if (at >= T) break;
    }
    for (let j = at; j < T; j++) docIds[r * T + j] = d;
  }
  return { docs, tokens, targets, docIds, lossMask };
}

const evalRng = new SynthRng(99);
const evalBatches = Array.from({ length: Math.ceil(evalDocs / rows) }, () => batch(evalRng, () => 9_999, rows));

const V = config.vocab_size;
let toShow = int('show', a.show, 0);
/**
 * Over the held-out ids: the first group's probability (median, share > 0.5), and the probability mass on every
 * candidate's first group (does the model copy a product id from the context at all, whichever it picks?).
 */
function evaluate(): { ids: number; median: number; sure: number; mass: number; loss: number; repeats: number; repeatSure: number } {
  const ps: number[] = [], masses: number[] = [], repeatPs: number[] = [];
  let nll = 0, n = 0;
  for (const b of evalBatches) {
    const r = model.forward({ tokens: b.tokens, targets: b.targets, docIds: b.docIds, lossMask: b.lossMask, batch: rows }, { grad: false, fullLogprobs: true });
    const full = r.fullLogprobs!.data();
    for (let i = 0; i < b.lossMask.length; i++) if (b.lossMask[i]) { nll -= r.logprobs[i]!; n++; }
    for (const { doc, row, at, kept } of b.docs) {
      for (const [k, s] of doc.idStarts.entries()) {
        const pos = row * T + at + s - 1;
        if (s >= kept) continue; // the id's first token was cut off with the end of the row
        if (doc.repeat[k]) {
          repeatPs.push(Math.exp(r.logprobs[pos]!));
          continue;
        }
        ps.push(Math.exp(r.logprobs[pos]!));
        const lp = full.subarray(pos * V, (pos + 1) * V);
        masses.push(doc.candidates.reduce((m, c) => m + Math.exp(lp[c]!), 0));
        if (toShow > 0) {
          toShow--;
          const top = [...lp.keys()].sort((x, y) => lp[y]! - lp[x]!).slice(0, 3);
          console.log(`  …${JSON.stringify(tok.decode(doc.tokens.slice(Math.max(0, s - 12), s)))} → ${JSON.stringify(tok.decode([doc.tokens[s]!]))} p ${ps.at(-1)!.toFixed(3)}; top ${top.map((t) => `${JSON.stringify(tok.decode([t]))} ${Math.exp(lp[t]!).toFixed(3)}`).join(', ')}; candidates ${doc.candidates.map((c) => tok.decode([c])).join(' ')} (mass ${masses.at(-1)!.toFixed(3)})`);
        }
      }
    }
    r.fullLogprobs!.dispose();
  }
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  return { ids: ps.length, median: median(ps), sure: ps.filter((p) => p > 0.5).length / ps.length, mass: median(masses), loss: nll / n,
    repeats: repeatPs.length, repeatSure: repeatPs.filter((p) => p > 0.5).length / Math.max(1, repeatPs.length) };
}

const shape = `${config.num_hidden_layers} layers ${types.map((t) => (t === 'full_attention' ? 'f' : 's')).join('')}, theta ${theta}, yarn ${config.rope_scaling ? 'on' : 'off'}`;
console.log(`recall probe: ${a.checkpoint} → ${shape}; ${rows} × ${T} tokens a step, lr ${lr}, seed ${seed}`);
const show = (s: number, secs: number) => {
  const e = evaluate();
  console.log(`step ${s}  ids ${e.ids}  first-group median p ${e.median.toFixed(3)}  share > 0.5 ${e.sure.toFixed(3)}  candidates' mass (median) ${e.mass.toFixed(3)}${e.repeats ? `  repeated ids ${e.repeats} share > 0.5 ${e.repeatSure.toFixed(3)}` : ''}  note loss ${e.loss.toFixed(4)}  ${secs.toFixed(0)} s`);
};
show(0, 0);
const opt = model.optimizer({ lr, weightDecay: 0.01, beta2: 0.95 });
const grads = [...model.gradients().values()];
const rng = new SynthRng(seed);
const trainWorld = () => rng.int(1_000, 1_007); // eight training worlds; the held-out one is 9,999
let secs = 0;
for (let s = 1; s <= steps; s++) {
  const t0 = performance.now();
  const b = batch(rng, trainWorld, rows, trainOrders);
  model.zeroGrad();
  model.forward({ tokens: b.tokens, targets: b.targets, docIds: b.docIds, lossMask: b.lossMask, batch: rows });
  model.backward();
  clipGradNorm(grads, 1);
  opt.lr = lr * Math.min(1, s / 10);
  opt.update();
  secs += (performance.now() - t0) / 1000;
  if (s % evalEvery === 0 || s === steps) show(s, secs);
}

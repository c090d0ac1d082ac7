/**
 * Retail DB costs behind episode resets and DB-reward evaluation (τ²-bench data, one process, one core):
 * - load: reading and validating db.json; building the hash index (sorted-key text + sha256 checkpoints), once;
 * - freshDb(): a copy-on-write episode DB;
 * - hashDb() of an unchanged DB, of a DB with one changed user or order (first time: resume from the last sha256
 *   checkpoint before the record; again: memo);
 * - the same hash computed by serialising the whole DB (what a naive implementation pays per evaluation).
 * Writes bench/results/retail-hash.{json,md}.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRetailDomain } from '../src/domains/retail/domain.ts';
import { hashRetailDb, hashRetailTables } from '../src/domains/retail/hash.ts';
import { loadRetailData } from '../src/domains/retail/load.ts';
import { pyRound } from '../src/tooluse/python/pyjson.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DATA_DIR = process.env.LONGRUN_TAU2_RETAIL ?? join(ROOT, '..', 'shared', 'tau2', 'retail');
const quick = process.argv.includes('--quick');

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function timeMs(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

let t0 = performance.now();
const data = loadRetailData(DATA_DIR);
const loadMs = performance.now() - t0;
const domain = createRetailDomain(data);
t0 = performance.now();
const initialHash = domain.hashDb(domain.freshDb());
const indexMs = performance.now() - t0;

const reps = quick ? 200 : 2000;
const fresh: number[] = [];
const unchanged: number[] = [];
for (let i = 0; i < reps; i++) {
  let db = domain.freshDb();
  fresh.push(timeMs(() => (db = domain.freshDb())));
  unchanged.push(timeMs(() => domain.hashDb(db)));
}

// One changed record per DB: distinct gift-card balances so every first hash misses the memo.
const orderIds = [...data.db.orders.keys()];
const users = [...data.db.users.values()].filter((u) => [...u.payment_methods.values()].some((m) => m.source === 'gift_card'));
const missReps = quick ? 50 : 300;
const miss: number[] = [];
const hit: number[] = [];
for (let i = 0; i < missReps; i++) {
  const user = users[i % users.length];
  const make = () => {
    const db = domain.freshDb();
    const w = db.getUserForWrite(user.user_id)!;
    for (const m of w.payment_methods.values()) if (m.source === 'gift_card') m.balance = pyRound(m.balance + 0.01 * (i + 1), 2);
    return db;
  };
  const a = make();
  miss.push(timeMs(() => hashRetailDb(a)));
  const b = make();
  hit.push(timeMs(() => hashRetailDb(b)));
}
const orderMiss: number[] = [];
for (let i = 0; i < missReps; i++) {
  const db = domain.freshDb();
  db.getOrderForWrite(orderIds[(i * 7) % orderIds.length])!.status = 'cancelled';
  orderMiss.push(timeMs(() => hashRetailDb(db)));
}
const fullReps = quick ? 5 : 20;
const full: number[] = [];
for (let i = 0; i < fullReps; i++) {
  const db = domain.freshDb();
  db.getOrderForWrite(orderIds[i])!.status = 'cancelled';
  full.push(timeMs(() => hashRetailTables(db.snapshot())));
}

const result = {
  date: new Date().toISOString(),
  node: process.version,
  cpu: cpus()[0]?.model ?? 'unknown',
  quick,
  initialHash,
  loadMs,
  hashIndexBuildMs: indexMs,
  freshDbMedianMs: median(fresh),
  hashUnchangedMedianMs: median(unchanged),
  hashOneChangeFirstMedianMs: median(miss),
  hashOneChangeMemoMedianMs: median(hit),
  hashOneOrderChangeFirstMedianMs: median(orderMiss),
  hashFullSerialisationMedianMs: median(full),
};

const f = (x: number, d = 3) => x.toFixed(d);
const md = [
  '# Retail DB: reset and hash costs (τ²-bench data)',
  '',
  `${result.date}, Node ${result.node}, ${result.cpu}, one process${quick ? ', quick run' : ''}. Command: \`npm run bench:retail-hash\`.`,
  '',
  '| measure | median ms |',
  '| --- | --- |',
  `| load + validate data folder (once) | ${f(loadMs, 1)} |`,
  `| build hash index (once) | ${f(indexMs, 1)} |`,
  `| freshDb() (copy-on-write episode DB) | ${f(result.freshDbMedianMs, 4)} |`,
  `| hashDb, unchanged DB | ${f(result.hashUnchangedMedianMs, 4)} |`,
  `| hashDb, one changed user, first time (checkpoint resume) | ${f(result.hashOneChangeFirstMedianMs)} |`,
  `| hashDb, one changed order, first time (orders sort first: most of the text is re-hashed) | ${f(result.hashOneOrderChangeFirstMedianMs)} |`,
  `| hashDb, same state again (memo) | ${f(result.hashOneChangeMemoMedianMs, 4)} |`,
  `| whole-DB serialisation + sha256 (naive) | ${f(result.hashFullSerialisationMedianMs, 1)} |`,
  '',
  `Initial hash: \`${initialHash}\`.`,
  '',
].join('\n');

const outDir = join(ROOT, 'bench', 'results');
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'retail-hash.json'), JSON.stringify(result, null, 2) + '\n');
writeFileSync(join(outDir, 'retail-hash.md'), md);
console.log(md);

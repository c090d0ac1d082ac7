import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createChatFormat } from '../../../src/llm/index.ts';
import { GptOssModel } from '../../../src/model/model.ts';
import { presetConfig } from '../../../src/model/config.ts';
import { runSft } from '../../../src/rl/sft.ts';
import { generateTaskSet } from '../../../src/domains/retail/synth/taskset.ts';
import { conversationDefaults, COMPACT_RETAIL_POLICY } from '../../../src/recipes/retail/prepare.ts';
import { trainSftTokenizer, TrajectoryRecordSchema } from '../../../src/rl/sft-data.ts';
import { createRetailDomain } from '../../../src/domains/retail/domain.ts';
import { EpisodeRunner } from '../../../src/domains/retail/synth/episode.ts';
import { ExpertAgent } from '../../../src/domains/retail/synth/expert.ts';
import { ScriptedRetailUser } from '../../../src/domains/retail/synth/user-sim.ts';
import { parseRetailStream, RetailStream, streamEvalDocuments, streamWorldSeed, type RetailStreamContext } from '../../../src/recipes/retail/stream.ts';
import { parseStagesRunFile } from '../../../src/recipes/train-setup.ts';
import { TASK_FAMILIES } from '../../../src/domains/retail/synth/scenario.ts';

let shared: Promise<Omit<RetailStreamContext, 'seqLen' | 'rowsPerStep'>> | undefined;
async function context(seqLen = 4096, rowsPerStep = 2): Promise<RetailStreamContext> {
  shared ??= sharedContext();
  return { ...(await shared), seqLen, rowsPerStep };
}

/** A small tokenizer and the conversation defaults of a generated task set, as a retail-synth run builds them. */
async function sharedContext(): Promise<Omit<RetailStreamContext, 'seqLen' | 'rowsPerStep'>> {
  const set = generateTaskSet({ worldSeed: 77, taskSeed: 1, count: 6, sizes: { products: 20, users: 20, orders: 40 }, difficulty: 1 });
  const domain = createRetailDomain({ db: set.world, policy: COMPACT_RETAIL_POLICY });
  const conversation = conversationDefaults({ dir: '', domain, world: set.world, tasks: set.tasks, scenarios: new Map(), meta: null }, 'compact');
  const runner = new EpisodeRunner({ domain, tasks: set.tasks, user: new ScriptedRetailUser(new Map(set.tasks.map((t) => [t.id, t.longrun]))) });
  const records = [];
  for (const t of set.tasks) records.push(TrajectoryRecordSchema.parse(JSON.parse(JSON.stringify(await runner.run(new ExpertAgent(), t.id, 3)))));
  const tokenizer = trainSftTokenizer(records, { vocabSize: 1024, format: 'harmony', ...conversation });
  return { format: createChatFormat('harmony', tokenizer), tokenizer, conversation };
}

const tokensOf = (d: { docs: readonly { tokens: Int32Array }[]; rows: readonly { docs: number[] }[] }) => d.rows.map((r) => r.docs.map((i) => Array.from(d.docs[i].tokens)));

/** A step's drill documents: its documents after the conversations, which come first and hold `conversationTokens`. */
function drillDocs(d: { docs: readonly { tokens: Int32Array }[] }, conversationTokens: number) {
  let n = 0;
  for (let tokens = 0; tokens < conversationTokens; n++) tokens += d.docs[n].tokens.length;
  return d.docs.slice(n);
}

type Drill = 'identity' | 'write' | 'copy' | 'lookup';

/**
 * `packing: fill`'s rule, checked: the room R left by the conversations (the rows' free tokens) gets quotas
 * q_i = R · share_i / Σ shares; a drill places documents only while it holds less than its quota, so it passes its quota
 * by less than its longest document L_i; the drills fill the room but for the rows' last free tokens F, so
 * Σ (kept_i − q_i) = −F, and a drill falls short of its quota by at most F + Σ_{j≠i} L_j. Each quota here is larger than
 * that slack, so a drill that placed nothing fails.
 */
function checkQuotas(ctx: RetailStreamContext, st: NonNullable<RetailStream['lastStats']>, shares: Partial<Record<Drill, number>>) {
  const kept = st.drillKept!, longest = st.drillLongest!;
  const free = ctx.seqLen * ctx.rowsPerStep - st.kept;
  const room = st.drillTokens + free;
  const total = Object.values(shares).reduce((a, b) => a + b, 0);
  const drills = Object.keys(shares) as Drill[];
  for (const kind of drills) {
    const q = (room * shares[kind]!) / total;
    const slack = free + drills.filter((j) => j !== kind).reduce((a, j) => a + longest[j]!, 0);
    const got = kept[kind]!;
    assert.ok(slack < q, `${kind}: the quota ${q.toFixed(0)} is larger than the slack ${slack}, so the check can fail`);
    assert.ok(got < q + longest[kind]! && got >= q - slack, `${kind}: ${got} tokens kept, quota ${q.toFixed(0)}, longest document ${longest[kind]}, slack ${slack}`);
  }
}

describe('retail stream (fresh SFT conversations every step)', () => {
  it('builds each step from its index alone, on new worlds, filling the rows, with the drill share', async () => {
    const ctx = await context();
    const spec = parseRetailStream({ seed: 3, tasksPerWorld: 4, world: { products: 20, users: 30, orders: 60 }, copyDrill: { share: 0.2 } });
    const a = new RetailStream(spec, ctx);
    const b = new RetailStream(spec, ctx);
    const s5 = await a.stepData(5);
    assert.deepEqual(tokensOf(await b.stepData(5)), tokensOf(s5), 'the same step from another instance (as after a resume)');
    const stats = a.lastStats!;
    assert.ok(stats.episodes >= 1 && stats.worlds >= 1);
    assert.equal(stats.expertSuccess, stats.episodes, 'the perfect expert solves every generated task');
    assert.ok(s5.rows.length <= ctx.rowsPerStep);
    assert.ok(stats.kept > 0.8 * ctx.seqLen * ctx.rowsPerStep, `rows are nearly full (${stats.kept} of ${ctx.seqLen * ctx.rowsPerStep})`);
    assert.ok(stats.drillTokens >= 0.2 * ctx.seqLen * ctx.rowsPerStep, 'drill tokens fill their share');
    assert.notDeepEqual(tokensOf(await a.stepData(6)), tokensOf(s5), 'another step, other conversations');
    // Different seeds or steps give different worlds.
    assert.notEqual(streamWorldSeed(3, 5, 0), streamWorldSeed(3, 6, 0));
    assert.notEqual(streamWorldSeed(3, 5, 0), streamWorldSeed(4, 5, 0));
    assert.notEqual(new RetailStream({ ...spec, seed: 4 }, ctx).fingerprint, a.fingerprint);
  });

  it('identity and write drills come from the step\'s own conversations, each up to its share, and leave a stream without them unchanged', async () => {
    const ctx = await context();
    const base = { seed: 3, tasksPerWorld: 4, world: { products: 20, users: 30, orders: 60 }, copyDrill: { share: 0.1 } };
    const spec = parseRetailStream({ ...base, identityDrill: { share: 0.1 }, writeDrill: { share: 0.1 } });
    const s = new RetailStream(spec, ctx);
    await s.stepData(2);
    const st = s.lastStats!;
    const budget = ctx.seqLen * ctx.rowsPerStep;
    assert.equal(st.drillsSkipped, 0, 'this step has identity checks and writes to drill');
    assert.ok(st.drillTokens >= 0.3 * budget, `three drills fill three shares (${st.drillTokens} of ${budget})`);
    assert.ok(st.conversationTokens >= 0.7 * budget && st.conversationTokens < 0.7 * budget + ctx.seqLen);
    // Conversation drills are added one document at a time (copy drills come in batches of 16, as they always did).
    // Each drill is generated until it holds its share of the budget, so it holds that share and less than one of its
    // documents more: together, between 0.2 × budget and that plus the two drills' longest documents.
    const only = new RetailStream(parseRetailStream({ ...base, copyDrill: undefined, identityDrill: { share: 0.1 }, writeDrill: { share: 0.1 } }), ctx);
    const od = await only.stepData(2);
    const os = only.lastStats!;
    assert.equal(os.drillsSkipped, 0);
    const longestDrill = Math.max(...drillDocs(od, os.conversationTokens).map((d) => d.tokens.length));
    assert.ok(os.drillTokens >= 0.2 * budget && os.drillTokens < 0.2 * budget + 2 * longestDrill, `${os.drillTokens} drill tokens for shares of 0.2 × ${budget} (each drill may pass its share by one document, the longest ${longestDrill} tokens)`);
    const plain = new RetailStream(parseRetailStream(base), ctx);
    assert.equal(plain.fingerprint, new RetailStream(parseRetailStream({ ...base }), ctx).fingerprint);
    assert.notEqual(plain.fingerprint, s.fingerprint);
    assert.throws(() => parseRetailStream({ ...base, identityDrill: { share: 1 } }), /identityDrill\.share/);
    await assert.rejects(new RetailStream(parseRetailStream({ ...base, copyDrill: { share: 0.5 }, identityDrill: { share: 0.3 }, writeDrill: { share: 0.3 } }), ctx).stepData(0), /add up to/);
  });

  it('packing: fill gives each drill its share of the kept tokens, the short copy drills too', async () => {
    // Eight rows: room enough that every quota is larger than the slack the rule allows (below).
    const ctx = await context(4096, 8);
    const base = { seed: 3, tasksPerWorld: 4, world: { products: 20, users: 30, orders: 60 }, copyDrill: { share: 0.2 }, identityDrill: { share: 0.3 }, writeDrill: { share: 0.1 } };
    const fill = new RetailStream(parseRetailStream({ ...base, packing: 'fill' }), ctx);
    const d = await fill.stepData(4);
    const st = fill.lastStats!;
    assert.deepEqual(tokensOf(await new RetailStream(parseRetailStream({ ...base, packing: 'fill' }), ctx).stepData(4)), tokensOf(d), 'deterministic');
    assert.ok(d.rows.length <= ctx.rowsPerStep && d.rows.every((r) => r.length <= ctx.seqLen && r.length === r.docs.reduce((a, i) => a + d.docs[i].tokens.length, 0)));
    const kept = d.rows.reduce((a, r) => a + r.length, 0);
    assert.equal(st.kept, kept);
    assert.ok(kept > 0.95 * ctx.seqLen * ctx.rowsPerStep, `rows are full (${kept} of ${ctx.seqLen * ctx.rowsPerStep})`);
    const room = kept - st.conversationTokens;
    const k = st.drillKept!;
    assert.equal(k.identity + k.write + k.copy, room, 'the room after the conversations is all drills');
    checkQuotas(ctx, st, { identity: 0.3, write: 0.1, copy: 0.2 });
    assert.notEqual(fill.fingerprint, new RetailStream(parseRetailStream(base), ctx).fingerprint, 'another packing is another stream');
    assert.throws(() => parseRetailStream({ ...base, packing: 'fullest' }), /packing/);
  });

  it('lookupDrill takes its share of the room with lookups continuing the step\'s conversations; unset, the stream is as before', async () => {
    const ctx = await context(4096, 8);
    const base = { seed: 3, tasksPerWorld: 4, world: { products: 20, users: 30, orders: 60 }, copyDrill: { share: 0.2 }, identityDrill: { share: 0.1 }, packing: 'fill' };
    const s = new RetailStream(parseRetailStream({ ...base, lookupDrill: { share: 0.2 } }), ctx);
    const d = await s.stepData(4);
    const k = s.lastStats!.drillKept!;
    const room = s.lastStats!.kept - s.lastStats!.conversationTokens;
    assert.equal(k.identity + k.write + k.copy + k.lookup!, room);
    checkQuotas(ctx, s.lastStats!, { identity: 0.1, copy: 0.2, lookup: 0.2 });
    assert.deepEqual(tokensOf(await new RetailStream(parseRetailStream({ ...base, lookupDrill: { share: 0.2 } }), ctx).stepData(4)), tokensOf(d), 'deterministic');
    const plain = new RetailStream(parseRetailStream(base), ctx);
    const p = await plain.stepData(4);
    assert.equal(plain.lastStats!.drillKept!.lookup, undefined);
    assert.equal(plain.fingerprint, new RetailStream(parseRetailStream({ ...base }), ctx).fingerprint);
    assert.notEqual(plain.fingerprint, s.fingerprint);
    // The step's conversations do not depend on the drill, which only takes room from their end.
    const n = Math.min(d.docs.length, p.docs.length, 3);
    assert.deepEqual(d.docs.slice(0, n).map((x) => Array.from(x.tokens)), p.docs.slice(0, n).map((x) => Array.from(x.tokens)));
    assert.throws(() => parseRetailStream({ ...base, lookupDrill: { share: 0.2, products: 1.5 } }), /lookupDrill\.products/);
  });

  it('never generates an excluded world, and the eval documents come from other worlds', async () => {
    const ctx = await context();
    const spec = parseRetailStream({ seed: 9, tasksPerWorld: 3, world: { products: 20, users: 30, orders: 60 } });
    const excluded = parseRetailStream({ ...spec, excludeWorldSeeds: [streamWorldSeed(9, 0, 0)] });
    const s = new RetailStream(excluded, ctx);
    const w = await s.worldRecords(0, 0);
    assert.equal(w, null, 'world 0 of step 0 is held out');
    assert.ok(await s.worldRecords(0, 1));
    const evalDocs = await streamEvalDocuments(spec, ctx, 2);
    const train = tokensOf(await new RetailStream(spec, ctx).stepData(0)).flat().map((t) => t.join(','));
    assert.ok(evalDocs.length >= 2);
    for (const d of evalDocs) assert.ok(!train.includes(Array.from(d.tokens).join(',')));
  });

  it('expert.restate and recovery.identity: off by default with the earlier fingerprint; on, the first replies restate and no identity lookup slips', async () => {
    const ctx = await context();
    const base = { seed: 3, tasksPerWorld: 4, world: { products: 20, users: 30, orders: 60 }, recovery: { rate: 0.5, names: true } };
    const plain = new RetailStream(parseRetailStream(base), ctx);
    const explicit = new RetailStream(parseRetailStream({ ...base, expert: { mistakeRate: 0, restate: false }, recovery: { ...base.recovery, identity: true, proposals: false } }), ctx);
    assert.equal(explicit.fingerprint, plain.fingerprint, 'the defaults leave the fingerprint of a stream written before them');
    const on = new RetailStream(parseRetailStream({ ...base, expert: { restate: true }, recovery: { ...base.recovery, identity: false } }), ctx);
    assert.notEqual(on.fingerprint, plain.fingerprint);
    assert.notEqual(new RetailStream(parseRetailStream({ ...base, expert: { restate: true } }), ctx).fingerprint, plain.fingerprint);
    const text = (d: { docs: readonly { tokens: Int32Array }[] }) => d.docs.map((x) => ctx.tokenizer.decode(Array.from(x.tokens))).join('\n');
    const [p, o] = [text(await plain.stepData(1)), text(await on.stepData(1))];
    assert.ok(!p.includes('you would like to'));
    assert.ok((o.match(/I can help with that: you would like to /g) ?? []).length >= 3, 'the first replies restate the request');
  });

  it('expert.notes: off by default with the earlier fingerprint; on, the conversations and long lookup drills carry notes in the loss', async () => {
    const ctx = await context();
    const base = { seed: 3, tasksPerWorld: 8, world: { products: 20, users: 30, orders: 60 }, families: ['modify_user_address', 'exchange', 'return', 'modify_items'], expert: { restate: true }, lookupDrill: { share: 0.3, fresh: 0, products: 1 }, packing: 'fill' };
    const plain = new RetailStream(parseRetailStream(base), ctx);
    assert.equal(new RetailStream(parseRetailStream({ ...base, expert: { restate: true, notes: false } }), ctx).fingerprint, plain.fingerprint, 'notes: false is the stream written before the option');
    const on = new RetailStream(parseRetailStream({ ...base, expert: { restate: true, notes: true } }), ctx);
    assert.notEqual(on.fingerprint, plain.fingerprint);
    const [p, o] = [await plain.stepData(2), await on.stepData(2)];
    const more = [await on.stepData(3), await on.stepData(4)];
    const analysis = '<|channel|>analysis<|message|>';
    const inLoss = (d: typeof o) => d.docs.map((x) => Array.from(x.tokens).map((t, i) => (x.lossMask[i] ? ctx.tokenizer.decode([t]) : '\u0000')).join('')).join('\n');
    assert.ok(!inLoss(p).includes(analysis), 'no notes unless asked');
    const notes = [o, ...more].map(inLoss).join('\n').split(analysis).slice(1).map((x) => x.slice(0, x.indexOf('<|end|>')));
    assert.ok(notes.length >= 4, `${notes.length} notes`);
    for (const n of notes) assert.match(n, /^\{"(name|user_id)": "/, 'every note is in the loss, as the tools print JSON');
    assert.ok(notes.some((n) => n.includes(' -> {"options": ')), 'an item proposal\'s note');
    assert.ok(notes.some((n) => n.startsWith('{"user_id": ')), 'a default-address write\'s note');
    // expert.walk: false keeps the notes stream; on, the item proposals' notes walk the variants, in the loss too
    assert.equal(new RetailStream(parseRetailStream({ ...base, expert: { restate: true, notes: true, walk: false } }), ctx).fingerprint, on.fingerprint);
    const walking = new RetailStream(parseRetailStream({ ...base, expert: { restate: true, notes: true, walk: true } }), ctx);
    assert.notEqual(walking.fingerprint, on.fingerprint);
    const walked = (await Promise.all([2, 3, 4].map((k) => walking.stepData(k)))).map(inLoss).join('\n').split(analysis).slice(1).map((x) => x.slice(0, x.indexOf('<|end|>')));
    assert.ok(walked.some((n) => /\n"\d+": \{"item_id": "\d+", "options": /.test(n) && n.includes(' -> {"item_id": "')), 'an item proposal\'s note walks the variants');
    assert.throws(() => parseRetailStream({ ...base, expert: { walk: true } }), /the walk is a note; set retail\.stream\.expert\.notes: true/);
  });

  it('lookupDrill.recall: 0 keeps the earlier fingerprint; on, the long drills end in a recall note; it needs expert.notes', async () => {
    const ctx = await context();
    const base = { seed: 3, tasksPerWorld: 4, world: { products: 20, users: 30, orders: 60 }, families: ['exchange', 'return'], expert: { notes: true }, lookupDrill: { share: 0.3, fresh: 0, products: 1 }, packing: 'fill' };
    const plain = new RetailStream(parseRetailStream(base), ctx);
    assert.equal(new RetailStream(parseRetailStream({ ...base, lookupDrill: { ...base.lookupDrill, recall: 0 } }), ctx).fingerprint, plain.fingerprint, 'recall: 0 is the stream written before the option');
    const on = new RetailStream(parseRetailStream({ ...base, lookupDrill: { ...base.lookupDrill, recall: 4 } }), ctx);
    assert.notEqual(on.fingerprint, plain.fingerprint);
    const [p, o] = [(await plain.worldRecords(2, 0))!, (await on.worldRecords(2, 0))!];
    assert.deepEqual(o.records, p.records, 'the conversations are the same');
    assert.equal(o.lookups.length, p.lookups.length);
    const noteLines = (ls: typeof o.lookups) => ls.flatMap((d) => d.messages.map((m) => m.reasoning?.split('\n').length ?? 0));
    assert.ok(Math.max(...noteLines(o.lookups)) >= 2 && Math.max(...noteLines(p.lookups)) === 1, 'notes of several items only with recall');
    assert.ok(noteLines(o.lookups).reduce((a, b) => a + b, 0) > 2 * noteLines(p.lookups).reduce((a, b) => a + b, 0), 'more noted items');
    assert.throws(() => parseRetailStream({ ...base, expert: {}, lookupDrill: { ...base.lookupDrill, recall: 2 } }), /recall.*notes/);
    assert.throws(() => parseRetailStream({ ...base, lookupDrill: { ...base.lookupDrill, maxOrders: 0, recall: 2 } }), /maxOrders/);
    assert.throws(() => parseRetailStream({ ...base, lookupDrill: { ...base.lookupDrill, recallTurns: 1 } }), /recallTurns needs recall/);
    assert.equal(new RetailStream(parseRetailStream({ ...base, lookupDrill: { ...base.lookupDrill, recallTurns: 0 } }), ctx).fingerprint, plain.fingerprint);
  });

  it('familyOrder: rotate starts each world\'s task list at a seeded family, so every family leads; unset, the stream is as before', async () => {
    const ctx = await context();
    const base = { seed: 3, tasksPerWorld: 4, world: { products: 20, users: 30, orders: 60 } };
    const plain = new RetailStream(parseRetailStream(base), ctx);
    const rotating = new RetailStream(parseRetailStream({ ...base, familyOrder: 'rotate' }), ctx);
    assert.equal(plain.familiesOf(5, 0), undefined, 'unset: the generator\'s own order');
    assert.equal(plain.fingerprint, new RetailStream(parseRetailStream({ ...base }), ctx).fingerprint);
    assert.notEqual(rotating.fingerprint, plain.fingerprint);
    const leads = new Map<string, number>();
    for (let step = 0; step < 200; step++) {
      const f = rotating.familiesOf(step, 0)!;
      assert.deepEqual([...f].sort(), [...TASK_FAMILIES].sort(), 'a rotation of all the families');
      const at = TASK_FAMILIES.indexOf(f[0]!);
      assert.deepEqual(f, [...TASK_FAMILIES.slice(at), ...TASK_FAMILIES.slice(0, at)]);
      leads.set(f[0]!, (leads.get(f[0]!) ?? 0) + 1);
    }
    for (const fam of TASK_FAMILIES) assert.ok((leads.get(fam) ?? 0) >= 8, `${fam} leads ${leads.get(fam) ?? 0} of 200 worlds`);
    assert.deepEqual(rotating.familiesOf(7, 1), rotating.familiesOf(7, 1), 'seeded');
    const only = new RetailStream(parseRetailStream({ ...base, families: ['cancel', 'return'], familyOrder: 'rotate' }), ctx);
    assert.ok([0, 1, 2, 3, 4, 5].every((st) => ['cancel', 'return'].includes(only.familiesOf(st, 0)![0]!)));
    // The world is the same; its tasks are dealt from the rotated list.
    const step = [0, 1, 2, 3, 4, 5, 6, 7].find((st) => rotating.familiesOf(st, 0)![0] !== 'cancel')!;
    const firstUser = async (st: RetailStream) => (await st.worldRecords(step, 0))!.records.map((r) => String(r.messages.find((m) => m.role === 'user')?.content));
    assert.notDeepEqual(await firstUser(rotating), await firstUser(plain));
    assert.throws(() => parseRetailStream({ ...base, familyOrder: 'shuffle' }), /familyOrder/);
  });

  it('validates its section with clear errors', () => {
    assert.throws(() => parseRetailStream({ seed: 1, copyDrill: { share: 1.5 } }), /retail\.stream\.copyDrill\.share/);
    assert.throws(() => parseRetailStream({ seed: -1 }), /retail\.stream\.seed/);
    assert.throws(() => parseRetailStream({ seed: 1, bogus: 2 }), /Unrecognized key/);
    const base = { task: 'retail-synth', policy: { type: 'gpt-oss', preset: 'tiny-1m', tokenizer: 't.json' } };
    const stream = (s: unknown = { seed: 1 }) => ({ tasks: { dataDir: 'x' }, stream: s });
    assert.throws(() => parseStagesRunFile({ ...base, retail: stream(), sft: { outDir: 'o' } }), /needs a step count/);
    assert.throws(() => parseStagesRunFile({ ...base, retail: stream(), sft: { outDir: 'o', data: 'a.jsonl' } }), /exactly one of sft\.data/);
    assert.throws(() => parseStagesRunFile({ ...base, retail: stream(), sft: undefined }), /retail\.stream: .*add an sft section/);
    assert.throws(() => parseStagesRunFile({ ...base, task: 'retail-v1', retail: stream(), sft: { outDir: 'o', config: { steps: 2 } } }), /retail\.stream: the stream plays synthetic retail conversations \(task retail-synth only\), not retail-v1/);
    assert.throws(() => parseStagesRunFile({ ...base, task: 'toy', retail: stream(), sft: { outDir: 'o', config: { steps: 2 } } }), /retail: the retail recipe's section goes with task/);
    assert.throws(() => parseStagesRunFile({ ...base, sft: { outDir: 'o', config: { steps: 2 } } }), /sft\.data: the SFT stage needs a trajectories file \(or, for task retail-synth, .*retail\.stream\)/);
    assert.equal(parseStagesRunFile({ ...base, retail: stream(), sft: { outDir: 'o', config: { steps: 2 } } }).trainer, null);
  });

  it('SFT on the stream resumes bit-identically', async () => {
    const ctx = await context(4096, 1);
    const spec = parseRetailStream({ seed: 5, tasksPerWorld: 2, world: { products: 20, users: 20, orders: 40 }, copyDrill: { share: 0.1 } });
    const config = { seqLen: 4096, microBatchTokens: 4096, rowsPerStep: 1, steps: 2, lr: 3e-3, warmupSteps: 1, checkpointEvery: 1, keepCheckpoints: 5, contextLossWeight: 1 };
    const make = () => new GptOssModel(presetConfig('tiny-1m', { vocab_size: ctx.tokenizer.vocabSize, max_position_embeddings: 4096 }), { seed: 2 });
    const dir = mkdtempSync(join(tmpdir(), 'longrun-stream-'));
    try {
      const whole = await runSft(config, { model: make(), data: { source: new RetailStream(spec, ctx) }, outDir: join(dir, 'whole'), quiet: true });
      const part = await runSft(config, { model: make(), data: { source: new RetailStream(spec, ctx) }, outDir: join(dir, 'part'), quiet: true, stopAfterStep: 1 });
      assert.equal(part.steps, 1);
      const rest = await runSft(config, { model: make(), data: { source: new RetailStream(spec, ctx) }, outDir: join(dir, 'part'), quiet: true, resume: true });
      assert.equal(rest.resumedFromStep, 1);
      assert.deepEqual(rest.history.map((m) => m.loss), whole.history.slice(1).map((m) => m.loss));
      const read = (p: string) => readFileSync(join(p, 'model', 'model.safetensors'));
      assert.ok(read(join(dir, 'whole')).equals(read(join(dir, 'part'))), 'the same weights');
      await assert.rejects(
        runSft(config, { model: make(), data: { source: new RetailStream({ ...spec, seed: 6 }, ctx) }, outDir: join(dir, 'part'), quiet: true, resume: true }),
        /training data differ/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

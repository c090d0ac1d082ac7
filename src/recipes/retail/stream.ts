/**
 * A stream of fresh retail SFT documents: every optimizer step trains on conversations that no step saw before.
 *
 * Step s of a stream with seed S is a pure function of (S, s):
 *   for k = 0, 1, 2, …:  world seed w = h(S, s, k)            a new synthetic world (users, orders, products)
 *                        tasks      = generateTaskSet(w, …)   `tasksPerWorld` verified tasks on it
 *                        episodes   = the expert against the scripted user on each task
 *                        documents  = the episodes rendered as the agent sees them (system prompt, tools)
 *   until the conversations fill (1 − drill shares) of the step's token budget (rowsPerStep × seqLen); then identity-,
 *   write- and lookup-drill conversations made from the step's own episodes, and copy-drill documents
 *   (src/recipes/retail/copy-drill.ts), each up to its share; the documents are packed first-fit-decreasing and the
 *   `rowsPerStep` fullest rows are the step (documents of rows left over are not trained on).
 * A step can therefore be rebuilt from its index alone: resuming a stream needs only the step count, and a resumed
 * run is bit-identical to an uninterrupted one. World seeds that a run holds out (its validation worlds) are never
 * generated: `excludeWorldSeeds`.
 *
 * The demonstrator is the synthetic expert (src/domains/retail/synth/expert.ts), optionally with its mistake knob,
 * so the same stream serves the base model (perfect expert) and imitation of a weaker agent.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { createRetailDomain } from '../../domains/retail/domain.ts';
import { EpisodeRunner } from '../../domains/retail/synth/episode.ts';
import { RecoveringAgent } from '../../domains/retail/synth/recovery.ts';
import { makeAgent } from '../../domains/retail/synth/rollouts.ts';
import { TASK_FAMILIES, type TaskFamily } from '../../domains/retail/synth/scenario.ts';
import { generateTaskSet } from '../../domains/retail/synth/taskset.ts';
import { ScriptedRetailUser } from '../../domains/retail/synth/user-sim.ts';
import { DEFAULT_WORLD_SIZES } from '../../domains/retail/synth/world.ts';
import { Mulberry32Rng } from '../../engine/random.ts';
import type { ChatFormat, Tokenizer, ToolSpec } from '../../llm/index.ts';
import { packDocuments, type PackedRow, type SftDocument } from '../../rl/packing.ts';
import type { SftSource, SftStepData } from '../../rl/sft.ts';
import { buildSftDocuments, TrajectoryRecordSchema, type TrajectoryRecord } from '../../rl/sft-data.ts';
import { writeDrillRecords } from './write-drill.ts';
import { freshOrderLookupRecord, lookupDrillRecord } from './lookup-drill.ts';
import { SynthRng } from '../../domains/retail/synth/rng.ts';
import { copyDrillDocuments } from './copy-drill.ts';
import { identityDrillRecords } from './identity-drill.ts';
import { policyText } from './prepare.ts';

const int = (min: number) => z.number().int().min(min);

export const RetailStreamSchema = z.object({
  /** Seeds every world, task, episode and drill of the stream. */
  seed: int(0),
  /** Tasks generated on each fresh world. */
  tasksPerWorld: int(1).default(8),
  world: z.object({ products: int(1).optional(), users: int(1).optional(), orders: int(0).optional() }).strict().default({}),
  /** A level 1–5 or a range [lo, hi]. */
  difficulty: z.union([int(1).max(5), z.tuple([int(1).max(5), int(1).max(5)])]).default(1),
  families: z.array(z.enum(TASK_FAMILIES)).min(1).optional(),
  /** The policy text of the generated domains (`compact`, `tau2` or a file); only the agent's system prompt shows it. */
  policy: z.string().default('compact'),
  /** The demonstrator: the synthetic expert, with `mistakeRate` > 0 a weaker agent (its mistake knob). */
  expert: z.object({
    mistakeRate: z.number().min(0).max(1).default(0),
    mistakeKinds: z.array(z.string().min(1)).min(1).optional(),
    /** Restate the request in the first reply (src/domains/retail/synth/expert.ts, `restatement`); off by default. */
    restate: z.boolean().default(false),
    /**
     * Notes (src/domains/retail/synth/expert.ts, `ExpertAgentOptions.notes`): the expert writes, as its chain of
     * thought, the tool-result text it copies ids from (order items before product lookups and item proposals, the
     * user id before a default-address write); the long lookup drills get the same note before their product lookups.
     * Off by default.
     */
    notes: z.boolean().default(false),
    /**
     * With `notes`: the note before an exchange or modification proposal walks the product's variants as printed, up
     * to the one wanted (`ExpertAgentOptions.walk`), so the new variant's id is copied forwards. Off by default.
     */
    walk: z.boolean().default(false),
    /**
     * With `notes`: the note before a product lookup for an exchange or modification walks the order's items as
     * printed, up to the one the customer named (`ExpertAgentOptions.itemWalk`): `true` one entry a line, `printed` the
     * entries joined as printed (a verbatim substring of the order details). Off by default.
     */
    itemWalk: z.union([z.boolean(), z.literal('printed')]).default(false),
  }).strict().default({ mistakeRate: 0, restate: false, notes: false, walk: false, itemWalk: false }),
  /**
   * Slips and recoveries (src/domains/retail/synth/recovery.ts): each read call of the demonstrator slips first with
   * probability `rate` (a wrong id, an item id for a product id, an email one character off); the slip is context,
   * out of the loss, and the right call after the tool's answer is in it. `names`: a name lookup may also slip on the
   * first or last name. `identity: false`: the identity lookups never slip (a "User not found" is then only ever
   * answered as on a failed_auth task: ask the customer for the other identity). `proposals`: a confirmation
   * proposal may also go out wrong first (the customer says no), then the right one.
   */
  recovery: z.object({ rate: z.number().min(0).max(1), maxPerEpisode: int(1).default(2), names: z.boolean().default(false), identity: z.boolean().default(true), proposals: z.boolean().default(false) }).strict().optional(),
  /** Copy-drill documents filling `share` of each step's token budget (0 = none). */
  copyDrill: z.object({
    share: z.number().min(0).lt(1),
    ids: z.tuple([int(1), int(1)]).refine(([a, b]) => a <= b, 'ids must be [min, max] with min ≤ max').default([2, 12]),
    people: z.number().min(0).max(1).default(0.3),
  }).strict().optional(),
  /**
   * Identity-check conversations with fresh random people on the openings of the step's expert conversations
   * (src/recipes/retail/identity-drill.ts), filling `share` of each step's token budget: the names, emails and zips a
   * model must copy into its first tool call. `byName`: the share of them that identify by name and zip (unset: those
   * who know their email give it, half of them).
   */
  identityDrill: z.object({ share: z.number().min(0).lt(1), byName: z.number().min(0).max(1).optional() }).strict().optional(),
  /**
   * The step's writing expert conversations cut after their first write call, fresh addresses in address writes
   * (src/recipes/retail/write-drill.ts), filling `share` of the budget: the write decision.
   */
  writeDrill: z.object({ share: z.number().min(0).lt(1) }).strict().optional(),
  /**
   * The step's expert conversations up to their `get_user_details` result, then lookups of the user's orders
   * (src/recipes/retail/lookup-drill.ts), filling `share` of the budget: ids copied out of tool results. Per
   * conversation, `fresh` short drills (the order ids replaced by fresh ones, one lookup) and one long drill (the real
   * orders in a random order, some of their products, the tools' real outputs). Unset leaves earlier streams unchanged
   * draw for draw.
   */
  lookupDrill: z.object({
    share: z.number().min(0).lt(1),
    /** Short drills per conversation: fresh order ids in the user details, one `get_order_details` call on one of them. */
    fresh: int(0).default(4),
    /** Orders looked up at most in the long drill of each conversation (0: no long drill). */
    maxOrders: int(0).default(5),
    /** Probability that an order lookup of the long drill is followed by a product lookup. */
    products: z.number().min(0).max(1).default(0.5),
    /**
     * With `expert.notes`: after each order lookup of the long drill, a product lookup after a note naming up to this
     * many items of all the orders read so far, found by name far back (src/recipes/retail/lookup-drill.ts, `recall`;
     * `products` is then unused). 0 (the default) leaves the drill unchanged.
     */
    recall: int(0).default(0),
    /** Recall turns more at the end of each long drill (lookup-drill.ts, `recallTurns`); needs `recall`. */
    recallTurns: int(0).default(0),
    /** Variant lines per recall turn (lookup-drill.ts, `variants`): ids found by their options; needs `recall`. */
    variants: int(0).default(0),
  }).strict()
    .refine((d) => d.recall === 0 || d.maxOrders > 0, 'recall needs the long drill (maxOrders > 0)')
    .refine((d) => d.recallTurns === 0 || d.recall > 0, 'recallTurns needs recall > 0')
    .refine((d) => d.variants === 0 || d.recall > 0, 'variants needs recall > 0')
    .optional(),
  /** World seeds the stream must never generate (the run's validation and test worlds). */
  excludeWorldSeeds: z.array(int(0)).default([]),
  /**
   * How a step's documents become its rows. Unset: every document is generated for its share of the budget, packed
   * first-fit decreasing, and the fullest rows kept, so the short drills, packed last, are the ones left out (at 60 %
   * identity drills 42–48 % of the kept tokens were identity drills, and 3 of 32 copy drills were kept;
   * scripts/stream-composition.ts at commit 550649c). `fill`: the conversations are packed first (they may pass their share by one
   * conversation) and the room left in the step's rows is shared among the drills by their shares, one drill document
   * at a time. Unset keeps the data of runs made before this option bit for bit.
   */
  packing: z.literal('fill').optional(),
  /**
   * The order of the families in each world's task list. A step takes its conversations from the front of the list
   * (one at a time until their share is filled, usually 3–4 of them), and the generator deals the families in list
   * order, so unset every step trained on the first three or four families (cancel, modify_items, modify_address,
   * modify_payment) and never on a return, an exchange, an info question, a forbidden request, a failed
   * authentication or a multi-request conversation, except as drills. `rotate` starts each world's list at a seeded
   * family, so every family comes first as often. Unset keeps the data of runs made before this option bit for bit.
   */
  familyOrder: z.literal('rotate').optional(),
}).strict();

export type RetailStreamSpec = z.output<typeof RetailStreamSchema>;

export function parseRetailStream(raw: unknown): RetailStreamSpec {
  const r = RetailStreamSchema.safeParse(raw);
  if (!r.success) throw new Error(`invalid retail.stream section:\n${r.error.issues.map((i) => `  retail.stream.${i.path.join('.')}: ${i.message}`).join('\n')}`);
  if (r.data.expert.walk && !r.data.expert.notes) throw new Error('invalid retail.stream section:\n  retail.stream.expert.walk: the walk is a note; set retail.stream.expert.notes: true as well');
  if (r.data.expert.itemWalk && !r.data.expert.notes) throw new Error('invalid retail.stream section:\n  retail.stream.expert.itemWalk: the item walk is a note; set retail.stream.expert.notes: true as well');
  if ((r.data.lookupDrill?.recall ?? 0) > 0 && !r.data.expert.notes) throw new Error('invalid retail.stream section:\n  retail.stream.lookupDrill.recall: the recall turn is a note; set retail.stream.expert.notes: true as well');
  return r.data;
}

/** A 32-bit hash of integers (murmur3's finaliser over a running mix). */
function hash32(...xs: number[]): number {
  let h = 0x9e3779b9;
  for (const x of xs) {
    h = Math.imul(h ^ (x >>> 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** The world seed of world k of step s (before exclusions). */
export function streamWorldSeed(seed: number, step: number, k: number): number {
  return hash32(seed, 0x5717, step, k);
}

export interface RetailStreamContext {
  format: ChatFormat;
  tokenizer: Tokenizer;
  /** The system prompt and tools the rollouts see (the run's conversation defaults). */
  conversation: { systemPrompt: string; tools: readonly ToolSpec[] };
  seqLen: number;
  rowsPerStep: number;
}

export interface RetailStreamStepStats {
  worlds: number;
  episodes: number;
  /** Expert episodes with reward 1 (the demonstrator's success on the step's tasks). */
  expertSuccess: number;
  conversationTokens: number;
  drillTokens: number;
  /** Tokens in the kept rows / tokens generated. */
  kept: number;
  generated: number;
  /** Mistakes the demonstrator made, by kind (when its mistake knob is on); `slip`: slipped reads (recovery knob). */
  mistakes: Record<string, number>;
  /** Conversation drills this step could not build from its conversations (their share went to the conversations). */
  drillsSkipped: number;
  /** `packing: fill`: the drill tokens placed in the rows, by drill. */
  drillKept?: { identity: number; write: number; copy: number; lookup?: number };
  /** `packing: fill`: the longest drill document placed, by drill (a drill passes its quota by less than one of its documents). */
  drillLongest?: { identity: number; write: number; copy: number; lookup?: number };
}

/** The `n` fullest packed rows, in packing order (first-fit decreasing leaves the short remainders in the last rows). */
function fullestRows(packed: readonly PackedRow[], n: number): PackedRow[] {
  return packed.map((r, i) => ({ r, i })).sort((a, b) => b.r.length - a.r.length || a.i - b.i).slice(0, n).sort((a, b) => a.i - b.i).map((x) => x.r);
}

/** The retail stream as an SFT data source (`runSft`'s `source`). */
/**
 * The spec as the fingerprint sees it: options added after checkpoints were first written are left out at their
 * defaults, so a run made before them still resumes (their defaults give the earlier streams, draw for draw).
 */
function fingerprintSpec(spec: RetailStreamSpec): unknown {
  const { restate, notes, walk, itemWalk, ...expert } = spec.expert;
  let recovery: Record<string, unknown> | undefined;
  if (spec.recovery !== undefined) {
    const { identity, proposals, ...rest } = spec.recovery;
    recovery = { ...rest, ...(identity ? {} : { identity }), ...(proposals ? { proposals } : {}) };
  }
  let lookupDrill: Record<string, unknown> | undefined;
  if (spec.lookupDrill !== undefined) {
    const { recall, recallTurns, variants, ...rest } = spec.lookupDrill;
    lookupDrill = { ...rest, ...(recall ? { recall } : {}), ...(recallTurns ? { recallTurns } : {}), ...(variants ? { variants } : {}) };
  }
  return { ...spec, expert: { ...expert, ...(restate ? { restate } : {}), ...(notes ? { notes } : {}), ...(walk ? { walk } : {}), ...(itemWalk ? { itemWalk } : {}) }, recovery, lookupDrill };
}

export class RetailStream implements SftSource {
  readonly stepsPerEpoch = Number.POSITIVE_INFINITY;
  readonly fingerprint: string;
  /** Statistics of the last step built. */
  lastStats: RetailStreamStepStats | null = null;
  private readonly excluded: Set<number>;
  private readonly policy: string;

  constructor(readonly spec: RetailStreamSpec, private readonly ctx: RetailStreamContext) {
    this.excluded = new Set(spec.excludeWorldSeeds);
    this.policy = policyText(spec.policy);
    const tokenizerProbe = ctx.tokenizer.encode('retail stream fingerprint #W0123456 credit_card_9876543 Nora Jackson');
    this.fingerprint = createHash('sha256')
      .update(JSON.stringify({ spec: fingerprintSpec(spec), seqLen: ctx.seqLen, rowsPerStep: ctx.rowsPerStep, format: ctx.format.name, vocab: ctx.tokenizer.vocabSize, probe: tokenizerProbe, conversation: ctx.conversation }))
      .digest('hex');
  }

  epochOf(): number {
    return 0;
  }

  /** The family list of world k of step s (`familyOrder`). */
  familiesOf(step: number, k: number): TaskFamily[] | undefined {
    if (this.spec.familyOrder !== 'rotate') return this.spec.families;
    const base = this.spec.families ?? TASK_FAMILIES;
    const at = hash32(this.spec.seed, 0xfa31, step, k) % base.length;
    return [...base.slice(at), ...base.slice(0, at)];
  }

  /** The expert episodes of world k of step s, as trajectory records. */
  async worldRecords(step: number, k: number): Promise<{ records: TrajectoryRecord[]; lookups: TrajectoryRecord[]; success: number; mistakes: Record<string, number> } | null> {
    const s = this.spec;
    const worldSeed = streamWorldSeed(s.seed, step, k);
    if (this.excluded.has(worldSeed)) return null;
    const difficulty: [number, number] = typeof s.difficulty === 'number' ? [s.difficulty, s.difficulty] : s.difficulty;
    const sizes = { products: s.world.products ?? DEFAULT_WORLD_SIZES.products, users: s.world.users ?? DEFAULT_WORLD_SIZES.users, orders: s.world.orders ?? DEFAULT_WORLD_SIZES.orders };
    const set = generateTaskSet({ worldSeed, taskSeed: hash32(s.seed, 0x7a5c, step, k), count: s.tasksPerWorld, sizes, families: this.familiesOf(step, k), difficulty, split: 'stream' });
    const domain = createRetailDomain({ db: set.world, policy: this.policy });
    const runner = new EpisodeRunner({ domain, tasks: set.tasks, user: new ScriptedRetailUser(new Map(set.tasks.map((t) => [t.id, t.longrun]))) });
    const expert = makeAgent('expert', {
      ...(s.expert.mistakeRate > 0 ? { mistakeRate: s.expert.mistakeRate, mistakeKinds: s.expert.mistakeKinds } : {}),
      ...(s.expert.restate ? { restate: true } : {}),
      ...(s.expert.notes ? { notes: true } : {}),
      ...(s.expert.walk ? { walk: true } : {}),
      ...(s.expert.itemWalk ? { itemWalk: s.expert.itemWalk } : {}),
    });
    const agent = s.recovery && s.recovery.rate > 0 ? new RecoveringAgent(expert, s.recovery) : expert;
    const records: TrajectoryRecord[] = [];
    const mistakes: Record<string, number> = {};
    let success = 0;
    try {
      for (let i = 0; i < set.tasks.length; i++) {
        const t = await runner.run(agent, set.tasks[i].id, hash32(s.seed, 0xe915, step, k, i));
        if (t.reward === 1) success++;
        for (const m of t.mistakes ?? []) mistakes[m.kind] = (mistakes[m.kind] ?? 0) + 1;
        if (t.slips?.length) mistakes.slip = (mistakes.slip ?? 0) + t.slips.length;
        records.push(TrajectoryRecordSchema.parse(JSON.parse(JSON.stringify({ ...t, ...this.ctx.conversation }))));
      }
    } finally {
      await runner.close();
    }
    const lookups: TrajectoryRecord[] = [];
    if (s.lookupDrill && s.lookupDrill.share > 0) {
      const rng = new SynthRng(hash32(s.seed, 0xd4, step, k));
      const { fresh, maxOrders, products, recall, recallTurns, variants } = s.lookupDrill;
      for (const r of records) {
        for (let i = 0; i < fresh; i++) {
          const d = freshOrderLookupRecord(r, rng);
          if (d) lookups.push(d);
        }
        const d = maxOrders > 0 ? lookupDrillRecord(r, domain, rng, { maxOrders, products, notes: s.expert.notes, ...(recall > 0 ? { recall, recallTurns, variants } : {}) }) : undefined;
        if (d) lookups.push(d);
      }
    }
    return { records, lookups, success, mistakes };
  }

  async stepData(step: number): Promise<SftStepData> {
    const { seqLen, rowsPerStep, format } = this.ctx;
    const budget = seqLen * rowsPerStep;
    const drillShare = (this.spec.copyDrill?.share ?? 0) + (this.spec.identityDrill?.share ?? 0) + (this.spec.writeDrill?.share ?? 0) + (this.spec.lookupDrill?.share ?? 0);
    if (drillShare >= 1) throw new Error(`retail stream: the drill shares add up to ${drillShare}, leaving no room for conversations`);
    const records: TrajectoryRecord[] = [];
    const lookups: TrajectoryRecord[] = [];
    const docs: SftDocument[] = [];
    const stats: RetailStreamStepStats = { worlds: 0, episodes: 0, expertSuccess: 0, conversationTokens: 0, drillTokens: 0, kept: 0, generated: 0, mistakes: {}, drillsSkipped: 0 };
    for (let k = 0; stats.conversationTokens < (1 - drillShare) * budget; k++) {
      if (k >= 16 && docs.length === 0) throw new Error(`retail stream: no conversation of step ${step}'s first ${k} worlds fits in seqLen ${seqLen}; raise seqLen`);
      if (k >= 1024) throw new Error(`retail stream: step ${step} did not fill ${budget} tokens from ${k} worlds`);
      const w = await this.worldRecords(step, k);
      if (!w) continue;
      stats.worlds++;
      stats.episodes += w.records.length;
      stats.expertSuccess += w.success;
      for (const [kind, n] of Object.entries(w.mistakes)) stats.mistakes[kind] = (stats.mistakes[kind] ?? 0) + n;
      records.push(...w.records);
      lookups.push(...w.lookups);
      // One conversation at a time, so the drill share holds (the rest of the world's episodes are not used).
      for (const d of buildSftDocuments(w.records, format, { maxSeqLen: seqLen, overflow: 'drop' }).docs) {
        if (stats.conversationTokens >= (1 - drillShare) * budget) break;
        docs.push(d);
        stats.conversationTokens += d.tokens.length;
      }
    }
    const shares = [this.spec.identityDrill?.share ?? 0, this.spec.writeDrill?.share ?? 0, this.spec.copyDrill?.share ?? 0, this.spec.lookupDrill?.share ?? 0];
    if (this.spec.packing === 'fill') return this.fillRows(step, docs, records, lookups, stats, shares, drillShare);
    for (const list of this.drillDocuments(step, records, lookups, shares.map((sh) => sh * budget), stats)) {
      for (const d of list) {
        docs.push(d);
        stats.drillTokens += d.tokens.length;
      }
    }
    stats.generated = stats.conversationTokens + stats.drillTokens;
    const rows = fullestRows(packDocuments(docs.map((d) => d.tokens.length), seqLen), rowsPerStep);
    stats.kept = rows.reduce((a, r) => a + r.length, 0);
    this.lastStats = stats;
    return { docs, rows };
  }

  /**
   * The drill documents of a step, by drill (identity, write, copy, lookup), each generated until it holds `targets[i]`
   * tokens (the identity, write and lookup drills one document past it at most, the copy drill a batch of 16; the
   * lookup drill also stops when the step's `lookups` run out). Each drill draws from its own generator seeded by the
   * step, so one drill's target never changes another's documents.
   */
  private drillDocuments(step: number, records: TrajectoryRecord[], lookups: readonly TrajectoryRecord[], targets: readonly number[], stats: RetailStreamStepStats): SftDocument[][] {
    const { seqLen, format, tokenizer } = this.ctx;
    const out: SftDocument[][] = [[], [], [], []];
    // Conversation drills over the step's own expert records, rendered without the system prompt (short documents).
    const recordDrills: ((seed: number) => TrajectoryRecord[])[] = [
      (seed) => identityDrillRecords(records, { documents: 16, seed, byName: this.spec.identityDrill?.byName }),
      (seed) => writeDrillRecords(records, { documents: 16, seed }),
    ];
    recordDrills.forEach((make, i) => {
      if (!(targets[i] > 0)) return;
      const rng = new Mulberry32Rng(hash32(this.spec.seed, 0xd2 + i, step));
      let tokens = 0;
      for (let round = 0; tokens < targets[i] && round < 256; round++) {
        let made: SftDocument[];
        try {
          made = buildSftDocuments(make(rng.int(2 ** 31)), format, { maxSeqLen: seqLen, overflow: 'drop' }).docs;
        } catch {
          made = []; // none of the step's conversations fits this drill (e.g. no write among them): conversations fill in
        }
        if (made.length === 0) {
          stats.drillsSkipped++;
          break;
        }
        for (const d of made) {
          if (tokens >= targets[i]) break; // one at a time, so the share holds
          out[i].push(d);
          tokens += d.tokens.length;
        }
      }
    });
    const cd = this.spec.copyDrill;
    if (cd && targets[2] > 0) {
      const rng = new Mulberry32Rng(hash32(this.spec.seed, 0xd1, step));
      let tokens = 0;
      while (tokens < targets[2]) {
        const batch = copyDrillDocuments(tokenizer, { documents: 16, seed: rng.int(2 ** 31), ids: cd.ids, people: cd.people }).filter((d) => d.tokens.length <= seqLen);
        for (const d of batch) {
          out[2].push(d);
          tokens += d.tokens.length;
        }
      }
    }
    if (targets[3] > 0) {
      let tokens = 0;
      for (const d of buildSftDocuments(lookups, format, { maxSeqLen: seqLen, overflow: 'drop' }).docs) {
        if (tokens >= targets[3]) break;
        out[3].push(d);
        tokens += d.tokens.length;
      }
    }
    return out;
  }

  /**
   * `packing: fill`: the conversations packed first-fit decreasing into the step's rows (the fullest `rowsPerStep` of
   * them), then the room left shared among the drills in proportion to their shares: the drill furthest below its
   * quota places its next document in the first row it fits, until every drill is placed or out of room.
   */
  private fillRows(step: number, convDocs: SftDocument[], records: TrajectoryRecord[], lookups: readonly TrajectoryRecord[], stats: RetailStreamStepStats, shares: readonly number[], drillShare: number): SftStepData {
    const { seqLen, rowsPerStep } = this.ctx;
    const docs = [...convDocs];
    const rows = fullestRows(packDocuments(docs.map((d) => d.tokens.length), seqLen), rowsPerStep).map((r) => ({ docs: [...r.docs], length: r.length }));
    while (rows.length < rowsPerStep) rows.push({ docs: [], length: 0 });
    const room = rows.reduce((a, r) => a + seqLen - r.length, 0);
    const quotas = shares.map((sh) => (drillShare > 0 ? (room * sh) / drillShare : 0));
    // A little more than the quota, so that documents which fit nowhere can be replaced by later ones.
    const lists = this.drillDocuments(step, records, lookups, quotas.map((q) => Math.ceil(q * 1.1)), stats);
    const next = [0, 0, 0, 0], placed = [0, 0, 0, 0], longest = [0, 0, 0, 0];
    for (;;) {
      let pick = -1, lowest = Infinity;
      quotas.forEach((q, i) => {
        if (q <= 0 || next[i] >= lists[i].length || placed[i] >= q) return;
        const filled = placed[i] / q;
        if (filled < lowest) { lowest = filled; pick = i; }
      });
      if (pick < 0) break;
      const d = lists[pick][next[pick]++];
      const row = rows.find((r) => r.length + d.tokens.length <= seqLen);
      if (!row) continue; // fits in no row: the next document of the same drill may
      row.docs.push(docs.length);
      row.length += d.tokens.length;
      docs.push(d);
      placed[pick] += d.tokens.length;
      longest[pick] = Math.max(longest[pick], d.tokens.length);
    }
    stats.drillTokens = placed.reduce((a, b) => a + b, 0);
    stats.drillKept = { identity: placed[0], write: placed[1], copy: placed[2], ...(this.spec.lookupDrill ? { lookup: placed[3] } : {}) };
    stats.drillLongest = { identity: longest[0], write: longest[1], copy: longest[2], ...(this.spec.lookupDrill ? { lookup: longest[3] } : {}) };
    stats.generated = stats.conversationTokens + lists.flat().reduce((a, d) => a + d.tokens.length, 0);
    stats.kept = rows.reduce((a, r) => a + r.length, 0);
    this.lastStats = stats;
    return { docs, rows: rows.filter((r) => r.docs.length > 0) };
  }
}

/**
 * Held-out conversations for the eval loss: `steps` steps of the stream under another seed, without drills or slips (still
 * avoiding excluded worlds; the worlds differ from the training stream's by their seeds).
 */
export async function streamEvalDocuments(spec: RetailStreamSpec, ctx: RetailStreamContext, steps = 4, salt = 0xe7a1): Promise<SftDocument[]> {
  const s = new RetailStream({ ...spec, seed: hash32(spec.seed, salt), copyDrill: undefined, identityDrill: undefined, writeDrill: undefined, lookupDrill: undefined, recovery: undefined }, ctx);
  const out: SftDocument[] = [];
  for (let step = 0; step < steps; step++) {
    const d = await s.stepData(step);
    out.push(...d.rows.flatMap((r) => r.docs.map((i) => d.docs[i])));
  }
  return out;
}

/** The world seeds of task-set folders (their synth.json), which a stream must not generate. */
export function heldOutWorldSeeds(dirs: readonly (string | undefined)[]): number[] {
  const out: number[] = [];
  for (const dir of dirs) {
    if (dir === undefined) continue;
    const file = join(dir, 'synth.json');
    if (!existsSync(file)) continue;
    const meta = JSON.parse(readFileSync(file, 'utf8')) as { worldSeed?: unknown };
    if (typeof meta.worldSeed !== 'number') throw new Error(`${file}: no numeric worldSeed; is this a synthetic task set?`);
    out.push(meta.worldSeed);
  }
  return out;
}

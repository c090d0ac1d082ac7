/**
 * The retail recipe's own section of a run file, `retail:`: every knob that only the retail tasks (`task:
 * retail-v0`, `retail-v1`, `retail-synth`) read. The generic sections (`task`/`env`, `policy`, `engine`, `backend`,
 * `sft`, `grpo`, `rollout`) hold only what applies to any env.
 *
 * ```yaml
 * task: retail-synth
 * retail:
 *   tasks: { dataDir: runs/x/data/train, valDir: runs/x/data/validation, maxSteps: 200, tools: compact }
 *   prepare: { dir: runs/x/data, seed: 7, tasks: {...}, expert: {...}, tokenizer: {...} }   # the data stage (prepare.ts)
 *   curriculum: { outDir: runs/x/curriculum, stages: [{ ids: [2, 3], steps: 150 }] }      # copy drills before SFT
 *   stream: { seed: 11, tasksPerWorld: 8, ... }     # SFT on fresh conversations instead of sft.data (stream.ts)
 *   drills: { copy: { documents: 8000 }, identity: {...}, address: {...}, write: {...} }   # mixed into sft.data
 * sft: { data: runs/x/data/expert.jsonl, outDir: runs/x/sft, config: {...} }
 * ```
 * Files written before this section existed name the knobs elsewhere (`taskOptions`, `prepare`, `curriculum`,
 * `sft.stream`, `sft.copyDrill`, …); `movedKeyErrors` lists each such key with where it went, and the parser refuses
 * them.
 */
import { z } from 'zod';
import { TASK_FAMILIES } from '../../domains/retail/synth/scenario.ts';
import { DRILL_CORPUS } from './copy-drill.ts';

/** The tasks whose run file may carry a `retail:` section. */
export const RETAIL_TASKS = ['retail-v0', 'retail-v1', 'retail-synth'] as const;

export function isRetailTask(task: string | undefined): task is (typeof RETAIL_TASKS)[number] {
  return (RETAIL_TASKS as readonly (string | undefined)[]).includes(task);
}

const idRange = z.tuple([z.number().int().min(1), z.number().int().min(1)]).refine(([a, b]) => a <= b, 'ids must be [min, max] with min ≤ max');

/** Which retail tasks a run trains and validates on, and how an episode of them runs. */
export const RetailTasksSchema = z.object({
  /** retail-v0/v1: τ²'s retail data folder (default: the one `longrun` finds); retail-synth: a task-set folder from `longrun gen tasks` (training). */
  dataDir: z.string().optional(),
  /** retail-v0/v1: the training split of τ²'s task file. */
  split: z.string().default('base'),
  /** retail-v0/v1: the validation split. */
  valSplit: z.string().optional(),
  /** Use only the first N training tasks (small runs). */
  maxTasks: z.number().int().positive().optional(),
  /** retail-synth: the validation task-set folder. */
  valDir: z.string().optional(),
  /** Env step limit per episode (retail-synth; default 200). */
  maxSteps: z.number().int().positive().optional(),
  /** retail-synth: tool schemas in the agent's prompt, τ²'s (`full`) or names and parameters only (`compact`). */
  tools: z.enum(['full', 'compact']).default('full'),
  /**
   * retail-synth: train (GRPO) only on tasks of these families (e.g. leave out families whose groups always score
   * alike); validation keeps every family.
   */
  trainFamilies: z.array(z.enum(TASK_FAMILIES)).min(1).optional(),
  /**
   * retail-synth: the scripted user of the training episodes leaves after turning down this many proposals
   * (`ScriptedUserOptions.maxRefusals`), so loops of wrong proposals end early; validation keeps the default user,
   * who turns proposals down as often as they come (as τ²'s does), as `longrun eval` does.
   */
  trainMaxRefusals: z.number().int().positive().optional(),
}).strict();

/** Documents of a drill mixed into the SFT documents of `sft.data`, and their seed. */
const drillCount = { documents: z.number().int().min(1), seed: z.number().int().min(0).default(0) };

/** The drills mixed into an SFT stage on a trajectories file (`sft.data`); a stream (`retail.stream`) takes its own. */
export const RetailDrillsSchema = z.object({
  /** Synthetic id-copying documents (src/recipes/retail/copy-drill.ts). */
  copy: z.object({
    ...drillCount,
    ids: idRange.default([4, 12]),
    /** Share of listed ids that are people (emails, user ids, names); 0 = numeric ids only. */
    people: z.number().min(0).max(1).default(0),
  }).strict().optional(),
  /**
   * Identity-check conversations with fresh random people, on the openings of the expert trajectories
   * (src/recipes/retail/identity-drill.ts); rendered without the system prompt, to stay short.
   */
  identity: z.object(drillCount).strict().optional(),
  /**
   * Address-change conversations of the expert trajectories with fresh random addresses, cut after the write call
   * (src/recipes/retail/address-drill.ts); rendered without the system prompt.
   */
  address: z.object(drillCount).strict().optional(),
  /**
   * Every expert conversation that writes, cut after its first write call, fresh addresses in address writes
   * (src/recipes/retail/write-drill.ts); rendered without the system prompt.
   */
  write: z.object(drillCount).strict().optional(),
}).strict();

/**
 * Copy-drill stages run before SFT, from the fresh model (src/recipes/retail/copy-drill.ts, runCopyCurriculum): each
 * stage an SFT run on drill documents listing `ids` ids, for `steps` steps; `config` holds SFT settings shared by the
 * stages.
 */
export const CopyCurriculumSchema = z.object({
  outDir: z.string(),
  documents: z.number().int().min(1).default(DRILL_CORPUS.documents),
  seed: z.number().int().min(0).default(DRILL_CORPUS.seed),
  config: z.record(z.string(), z.unknown()).default({}),
  stages: z.array(z.object({
    ids: idRange,
    steps: z.number().int().min(1),
    /** Share of listed ids that are people (emails, user ids, names); default 0. */
    people: z.number().min(0).max(1).optional(),
  }).strict()).min(1),
}).strict();

export const RetailSectionSchema = z.object({
  /** The task sets, their splits and episode limits (was `taskOptions`). */
  tasks: RetailTasksSchema.prefault({}),
  /**
   * The data stage (src/recipes/retail/prepare.ts, `PrepareSchema`), run by `longrun train` before everything else:
   * synthetic task sets, expert trajectories, a tokenizer. retail-synth only. Checked by its stage.
   */
  prepare: z.unknown().optional(),
  /** The copy curriculum, run before the SFT stage (was `curriculum`). */
  curriculum: CopyCurriculumSchema.optional(),
  /**
   * The SFT stage's data as a stream of fresh retail conversations instead of `sft.data` (retail-synth;
   * src/recipes/retail/stream.ts, `RetailStreamSchema`): every step on new worlds, tasks and users, never one seen
   * before; `sft.config.steps` sets the length, `sft.outDir` where it goes. Checked by its stage.
   */
  stream: z.unknown().optional(),
  /** Drills mixed into the documents of `sft.data` (was `sft.copyDrill`, `sft.identityDrill`, …). */
  drills: RetailDrillsSchema.optional(),
}).strict();

export type RetailSection = z.output<typeof RetailSectionSchema>;
export type RetailTaskOptions = RetailSection['tasks'];
export type RetailDrills = NonNullable<RetailSection['drills']>;

/** Where each retail knob of the old layout went: [old path, new path]. */
export const MOVED_RETAIL_KEYS: readonly (readonly [string, string])[] = [
  ['taskOptions', 'retail.tasks'],
  ['prepare', 'retail.prepare'],
  ['curriculum', 'retail.curriculum'],
  ['sft.stream', 'retail.stream'],
  ['sft.copyDrill', 'retail.drills.copy'],
  ['sft.identityDrill', 'retail.drills.identity'],
  ['sft.addressDrill', 'retail.drills.address'],
  ['sft.writeDrill', 'retail.drills.write'],
];

const isMapping = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `path: moved to …` for every retail knob of a raw run file that sits where the old layout had it. */
export function movedKeyErrors(raw: unknown): string[] {
  if (!isMapping(raw)) return [];
  const out: string[] = [];
  for (const [from, to] of MOVED_RETAIL_KEYS) {
    const [head, tail] = from.split('.') as [string, string | undefined];
    const found = tail === undefined ? head in raw : isMapping(raw[head]) && tail in raw[head];
    if (found) out.push(`${from}: moved to ${to} (see src/recipes/README.md)`);
  }
  return out;
}

/**
 * What a run file's retail section conflicts with, as `path: reason` lines: the task it goes with, and the SFT
 * stage its stream and drills belong to.
 */
export function retailSectionConflicts(run: { task?: string; env?: unknown; rollout?: unknown; retail?: RetailSection; sft?: { data?: string; config: Record<string, unknown> }; grpo?: unknown }): string[] {
  const r = run.retail;
  if (r === undefined) return [];
  const what = run.env !== undefined ? 'an env: run' : `task ${run.task ?? '(none)'}`;
  if (!isRetailTask(run.task)) return [`retail: the retail recipe's section goes with task ${RETAIL_TASKS.join(', ')}; this is ${what}`];
  const out: string[] = [];
  const synthOnly = (path: string, why: string) => {
    if (run.task !== 'retail-synth') out.push(`${path}: ${why} (task retail-synth only), not ${run.task}`);
  };
  if (r.tasks.trainFamilies) synthOnly('retail.tasks.trainFamilies', 'the families of synthetic task sets');
  if (r.tasks.trainMaxRefusals !== undefined) synthOnly('retail.tasks.trainMaxRefusals', 'the scripted user\'s patience');
  if (r.prepare !== undefined) synthOnly('retail.prepare', 'the data stage makes synthetic task sets');
  if (r.stream !== undefined) {
    synthOnly('retail.stream', 'the stream plays synthetic retail conversations');
    if (!run.sft) out.push('retail.stream: the stream is the SFT stage\'s data; add an sft section (outDir, config.steps)');
    else if (run.sft.data !== undefined) out.push('retail.stream: give exactly one of sft.data (a trajectories file) and retail.stream (fresh conversations)');
    else if (run.grpo === undefined && run.sft.config.steps === undefined) out.push('sft.config.steps: a streamed SFT stage needs a step count');
  }
  if (r.drills !== undefined) {
    if (r.stream !== undefined) out.push('retail.drills: the drills are mixed into sft.data; a stream takes its own (retail.stream.copyDrill, identityDrill, writeDrill, lookupDrill)');
    else if (run.sft?.data === undefined) out.push('retail.drills: the drills are mixed into the documents of sft.data; add an sft section with data');
  }
  return out;
}

const DEFAULT_TASKS: RetailTaskOptions = RetailTasksSchema.parse({});

/** The run's retail task options, the defaults where the file has no `retail.tasks`. */
export function retailTaskOptions(run: { retail?: RetailSection }): RetailTaskOptions {
  return run.retail?.tasks ?? { ...DEFAULT_TASKS };
}

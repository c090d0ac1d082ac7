/**
 * Copy drill: synthetic documents that teach a from-scratch model to copy ids out of its context.
 *
 * A retail agent spends most of its hard tokens on ids it has read earlier in the conversation (`#W4615687`,
 * `1008292230`, `credit_card_2015949`, a zip code). A small model trained from scratch on expert trajectories alone
 * learns the protocol long before it learns to copy: the copies are a few percent of its targets and each id is new.
 * The drill supplies copies densely: a document lists k random ids, then repeats a shuffled subset of them, and
 * only the repetition is trained on —
 *
 *   ids: #W4615687, credit_card_2015949, 1008292230, #W1182763
 *   again: 1008292230, #W4615687
 *
 * The ids use the retail shapes (prefix + 4–10 digits) and the run's own tokenizer, so the drill trains exactly the
 * tokens the agent must later copy. Which id is repeated next is a choice (its first digits carry entropy); the rest
 * of it is determined by the context. Mixed into SFT (`retail.drills.copy` in a run file), the drill documents
 * are packed with the expert trajectories like any other document. Deterministic for a seed.
 */
import { join } from 'node:path';
import { Mulberry32Rng } from '../../engine/random.ts';
import { FIRST_NAMES, LAST_NAMES } from '../../domains/retail/synth/catalog-data.ts';
import type { Tokenizer } from '../../llm/index.ts';
import type { GptOssModel } from '../../model/model.ts';
import type { SftDocument } from '../../rl/packing.ts';

export interface CopyDrillOptions {
  /** Number of documents. */
  documents: number;
  seed?: number;
  /** Ids listed per document, inclusive range. Default [4, 12]. */
  ids?: [number, number];
  /**
   * Share of the listed ids that are people rather than numbers: an email (`nora.jackson5298@example.com`), a user id
   * (`nora_jackson_5298`) or a name (`Nora Jackson`), from the synthetic retail world's name lists. Names are
   * whole-word tokens that the numeric drill never trains, and a wrong one fails the identity check every write task
   * starts with. Default 0 (numeric ids only).
   */
  people?: number;
}

const SHAPES: { prefix: string; digits: [number, number] }[] = [
  { prefix: '#W', digits: [7, 7] },
  { prefix: '', digits: [10, 10] },
  { prefix: 'credit_card_', digits: [7, 7] },
  { prefix: 'gift_card_', digits: [7, 7] },
  { prefix: 'paypal_', digits: [7, 7] },
  { prefix: '', digits: [5, 5] },
  { prefix: '', digits: [4, 6] },
];

function randomPerson(rng: Mulberry32Rng): string {
  const first = FIRST_NAMES[rng.int(FIRST_NAMES.length)], last = LAST_NAMES[rng.int(LAST_NAMES.length)];
  const shape = rng.int(3);
  if (shape === 2) return `${first} ${last}`;
  let digits = String(1 + rng.int(9));
  while (digits.length < 4) digits += String(rng.int(10));
  return shape === 0 ? `${first}.${last}${digits}@example.com`.toLowerCase() : `${first}_${last}_${digits}`.toLowerCase();
}

function randomId(rng: Mulberry32Rng, people: number): string {
  if (people > 0 && rng.next() < people) return randomPerson(rng);
  const shape = SHAPES[rng.int(SHAPES.length)];
  const n = shape.digits[0] + rng.int(shape.digits[1] - shape.digits[0] + 1);
  let digits = String(1 + rng.int(9));
  while (digits.length < n) digits += String(rng.int(10));
  return shape.prefix + digits;
}

/** One drill document as text, with the character offset where the trained part (the repetition) starts. */
export function copyDrillText(rng: Mulberry32Rng, ids: [number, number] = [4, 12], people = 0): { text: string; trainedFrom: number } {
  const k = ids[0] + rng.int(ids[1] - ids[0] + 1);
  const listed = Array.from({ length: k }, () => randomId(rng, people));
  const order = listed.map((_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  const repeated = order.slice(0, 1 + rng.int(k)).map((i) => listed[i]);
  const head = `ids: ${listed.join(', ')}\nagain:`;
  return { text: `${head} ${repeated.join(', ')}\n`, trainedFrom: head.length };
}

/** One document from its untrained head and trained tail (tokenized apart, so the mask boundary is exact). */
export function drillDocument(tokenizer: Tokenizer, head: string, tail: string): SftDocument {
  const headIds = tokenizer.encode(head);
  const tokens = Int32Array.from([...headIds, ...tokenizer.encode(tail)]);
  const lossMask = new Uint8Array(tokens.length);
  lossMask.fill(1, headIds.length);
  return { tokens, lossMask };
}

/** Tokenized drill documents: loss on the tokens of the repetition only. */
export function copyDrillDocuments(tokenizer: Tokenizer, options: CopyDrillOptions): SftDocument[] {
  if (!(Number.isInteger(options.documents) && options.documents >= 1)) throw new RangeError(`copyDrill: documents must be a positive integer, got ${options.documents}`);
  const ids = options.ids ?? [4, 12];
  if (!(Number.isInteger(ids[0]) && Number.isInteger(ids[1]) && ids[0] >= 1 && ids[1] >= ids[0])) throw new RangeError(`copyDrill: ids must be [min, max] with 1 ≤ min ≤ max, got ${JSON.stringify(ids)}`);
  const people = options.people ?? 0;
  if (!(people >= 0 && people <= 1)) throw new RangeError(`copyDrill: people must be a share in [0, 1], got ${options.people}`);
  const rng = new Mulberry32Rng(options.seed ?? 0);
  const docs: SftDocument[] = [];
  for (let d = 0; d < options.documents; d++) {
    const { text, trainedFrom } = copyDrillText(rng, ids, people);
    docs.push(drillDocument(tokenizer, text.slice(0, trainedFrom), text.slice(trainedFrom)));
  }
  return docs;
}

/**
 * The SFT settings of a drill stage (a run file's `retail.curriculum`): 16 packed rows of 512 tokens per step,
 * constant learning rate 2e-3 after 10 warm-up steps.
 */
export const DRILL_SFT_DEFAULTS = {
  seed: 0, seqLen: 512, microBatchTokens: 8192, rowsPerStep: 16, lr: 2e-3, warmupSteps: 10, schedule: 'constant', gradClip: 1,
  checkpointEvery: 50, keepCheckpoints: 10,
} as const;

/** The drill corpus of a stage: the curriculum's defaults. */
export const DRILL_CORPUS = { documents: 40000, seed: 1 } as const;

export interface CopyCurriculumSpec {
  /** Each stage's SFT output (metrics, checkpoints) goes to OUTDIR/stage-N. */
  outDir: string;
  /** Drill documents generated per stage, and their seed (the same seed in every stage: only `ids` differs). */
  documents: number;
  seed: number;
  /** SFT settings shared by all stages, over DRILL_SFT_DEFAULTS. */
  config: Record<string, unknown>;
  stages: { ids: [number, number]; steps: number; people?: number }[];
}

export interface CopyCurriculumStageResult {
  stage: number;
  ids: [number, number];
  steps: number;
  finalLoss: number | null;
}

/**
 * A copy curriculum: drill stages run one after the other on the same model, each a fresh SFT run (its own
 * optimizer and warm-up) over drill documents with more ids per document than the last. A from-scratch model learns
 * to copy among 2–3 ids, and from there the skill carries to more ids at once; it never starts on 4–12 ids directly
 * (docs/results/retail-tiny/). Stages resume from their checkpoints, and a finished stage only reloads its weights.
 */
export async function runCopyCurriculum(
  spec: CopyCurriculumSpec,
  options: { model: GptOssModel; tokenizer: Tokenizer; padId: number; quiet?: boolean; log?: (line: string) => void },
): Promise<CopyCurriculumStageResult[]> {
  const { runSft } = await import('../../rl/sft.ts');
  const out: CopyCurriculumStageResult[] = [];
  for (const [i, stage] of spec.stages.entries()) {
    const docs = copyDrillDocuments(options.tokenizer, { documents: spec.documents, seed: spec.seed, ids: stage.ids, people: stage.people });
    const label = `curriculum stage ${i + 1}/${spec.stages.length} (ids ${stage.ids[0]}–${stage.ids[1]})`;
    const result = await runSft({ ...DRILL_SFT_DEFAULTS, ...spec.config, steps: stage.steps, padId: options.padId }, {
      model: options.model, data: docs, outDir: join(spec.outDir, `stage-${i + 1}`), resume: true, quiet: options.quiet ?? true,
      onStep: (m) => {
        if (m.step % 10 === 0) options.log?.(`${label} step ${m.step}: drill loss ${m.loss.toFixed(3)}, ${Math.round(m.tokensPerSec)} tok/s`);
      },
    });
    options.log?.(`${label}: ${result.steps} steps, final drill loss ${result.finalLoss?.toFixed(3) ?? 'n/a'}`);
    out.push({ stage: i + 1, ids: stage.ids, steps: stage.steps, finalLoss: result.finalLoss ?? null });
  }
  return out;
}

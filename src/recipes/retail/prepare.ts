/**
 * The data stage of a retail run (`retail.prepare` in a `longrun train --config` file), so one file runs the whole
 * pipeline: synthetic train/validation task sets over distinct world seeds (as `longrun gen tasks`) → expert
 * trajectories on the train split with the scripted user (as `longrun rollout --agent expert`, the SFT corpus) → a
 * byte-level BPE tokenizer trained on those trajectories rendered with the agent system prompt and tool schemas the
 * rollouts will see (as `longrun sft` does).
 *
 * ```yaml
 * retail:
 *   prepare:
 *     dir: runs/retail-tiny/data     # writes DIR/train/, DIR/validation/, DIR/expert.jsonl, DIR/tokenizer.json, DIR/prepare.json
 *     seed: 7                        # task and world seeds derive from it
 *     tasks: { train: 200, validation: 50, difficulty: 1, families: [cancel, info], policy: tau2, users: 100, orders: 200 }
 *     expert: { trials: 1 }
 *     tokenizer: { vocabSize: 2048 }
 * ```
 * `policy`: `tau2` (τ²'s retail policy.md, ~6.7k characters), `compact` (the short summary below, for the small-model
 * runs: the prompt is then mostly the 16 tool schemas) or a file path. Idempotent: DIR/prepare.json records the
 * section; a second run with the same section reuses the files, a different one is refused.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { resolveRetailDataDir } from '../../domains/retail/register.ts';
import { makeAgent, makeUser, runRollouts } from '../../domains/retail/synth/rollouts.ts';
import { TASK_FAMILIES } from '../../domains/retail/synth/scenario.ts';
import { assertDisjointWorlds, generateTaskSet, readTaskSet, writeTaskSet, type LoadedSynthTaskSet, type SynthTaskSet } from '../../domains/retail/synth/taskset.ts';
import type { SynthTask } from '../../domains/retail/synth/task-gen.ts';
import { DEFAULT_WORLD_SIZES } from '../../domains/retail/synth/world.ts';
import type { ToolSpec } from '../../llm/index.ts';
import { SINGLE_DIGIT_PRETOKENIZE_PATTERN } from '../../llm/pretokenize.ts';
import { LLAMA_CPP_PRETOKENIZER_PATTERNS } from '../../model/checkpoint/gguf-tokenizer.ts';
import { DONE_TOOL_SCHEMA } from '../../tooluse/env.ts';
import { agentSystemPrompt } from '../../tooluse/openai.ts';
import { readTrajectoriesJsonl, trainSftTokenizer } from '../../rl/sft-data.ts';

/** A short statement of τ²'s retail policy (same rules, a fraction of the tokens), for small-model runs. */
export const COMPACT_RETAIL_POLICY = [
  '# Retail agent policy',
  '- First authenticate the user by email, or by first name, last name and zip code, even if they give a user id.',
  '- Help one user only; never reveal another user\'s data. Refuse requests against the policy and say why.',
  '- Before any write (cancel, modify, return, exchange, address or payment change) list the details and ask for an explicit yes; then make one call.',
  '- Cancel or modify only pending orders; return or exchange only delivered ones. Cancellation reason: "no longer needed" or "ordered by mistake".',
  '- Item changes keep the product and pick an available variant; collect every item to change before the single call.',
  '- Refunds and price differences go to the original payment method or a gift card; a new payment method for a pending order must differ.',
  '- Transfer to a human only if the request is outside these tools and rules.',
].join('\n');

const int = (min: number) => z.number().int().min(min);

export const PrepareSchema = z.object({
  dir: z.string().min(1),
  seed: int(0).default(0),
  tasks: z.object({
    train: int(1),
    validation: int(1),
    /** A level 1–5 or a range [lo, hi]. */
    difficulty: z.union([int(1).max(5), z.tuple([int(1).max(5), int(1).max(5)])]).default([1, 3]),
    families: z.array(z.enum(TASK_FAMILIES)).min(1).optional(),
    products: int(1).optional(),
    users: int(1).optional(),
    orders: int(0).optional(),
    policy: z.string().default('tau2'),
    /**
     * `per-split` (the default): validation tasks run on a world of their own, so nothing about the training world
     * helps. `shared`: validation tasks are new tasks on the training world, as in τ²-bench, where the train and
     * test tasks share one database; a validation task whose gold actions and expected answers equal a training
     * task's is left out.
     */
    world: z.enum(['per-split', 'shared']).optional(),
  }).strict(),
  expert: z.object({ trials: int(1).default(1), seed: int(0).default(0) }).strict().default({ trials: 1, seed: 0 }),
  tokenizer: z.object({
    vocabSize: int(260),
    format: z.enum(['harmony', 'hermes']).default('harmony'),
    /**
     * `groups` (default): runs of up to three digits, GPT-style; `single`: one token per digit; `single-llama`: one
     * token per digit with llama.cpp's `starcoder` splitting, so a GGUF export tokenizes exactly as longrun does
     * (`single` differs from it only on uppercase contractions, combining marks and whitespace runs before a digit);
     * `groups-llama`: digits in groups of up to three from the left with llama.cpp's `llama-bpe` (Llama 3) splitting, so
     * a 7-digit order id is three tokens and a 10-digit item id four, and GGUF exports tokenize exactly as longrun does.
     */
    digits: z.enum(['groups', 'single', 'single-llama', 'groups-llama']).optional(),
    /**
     * `merge` (default): BPE may merge a space with the word after it, as GPT-style tokenizers do; `separate`: a space
     * stays its own token before a letter, so a name encodes alike in the user's sentence and in a tool call's JSON
     * argument (" Moreau" is " " + the tokens of "Moreau"), one more token per word; GGUF exports stay exact. With
     * `digits: groups-llama`, whose split keeps one leading symbol with a word (`"order`, `_jackson`), every ASCII
     * symbol stays its own token before a letter.
     */
    spaces: z.enum(['merge', 'separate']).optional(),
  }).strict(),
  /** Tool schemas in the prompts the tokenizer is trained on (the run's `retail.tasks.tools`; set by `longrun train`). */
  tools: z.enum(['full', 'compact']).default('full'),
}).strict();

export type PrepareSpec = z.infer<typeof PrepareSchema>;

export interface PreparedData {
  trainDir: string;
  validationDir: string;
  trajectories: string;
  tokenizer: string;
  /** What happened, one line each. */
  log: string[];
  reused: boolean;
}

/** How tool schemas appear in the prompt: τ²'s full schemas, or `compact` (names, parameters and types only). */
export type ToolSchemaStyle = 'full' | 'compact';

function stripDescriptions(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(stripDescriptions);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'description' || k === 'title') continue;
    // `properties` maps parameter names (which may be called "description") to schemas.
    out[k] = k === 'properties' && v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).map(([name, p]) => [name, stripDescriptions(p)]))
      : stripDescriptions(v);
  }
  return out;
}

/**
 * Tool schemas without descriptions: names, parameter names, types, enums and required flags stay. For models
 * trained from scratch the descriptions are constant text they learn nothing from; dropping them cuts the retail
 * prompt from ~2.6k to well under 1k tokens, which is most of an episode.
 */
export function compactToolSpecs(tools: readonly ToolSpec[]): ToolSpec[] {
  return tools.map((t) => ({ type: 'function', function: { name: t.function.name, ...(t.function.parameters ? { parameters: stripDescriptions(t.function.parameters) as Record<string, unknown> } : {}) } }));
}

/** The agent's view at rollout time: τ²'s system prompt with the task set's policy, the env's tools (+ `done`). */
export function conversationDefaults(set: LoadedSynthTaskSet, tools: ToolSchemaStyle = 'full'): { systemPrompt: string; tools: ToolSpec[] } {
  const specs = [...set.domain.tools.map((t) => t.schema as ToolSpec), DONE_TOOL_SCHEMA as ToolSpec];
  return { systemPrompt: agentSystemPrompt(set.domain.policy), tools: tools === 'compact' ? compactToolSpecs(specs) : specs };
}

/** The policy text a prepare or stream section names: `compact`, `tau2` (τ²'s policy.md) or a file path. */
export function policyText(policy: string): string {
  if (policy === 'compact') return COMPACT_RETAIL_POLICY;
  const file = policy === 'tau2' ? join(resolveRetailDataDir(), 'policy.md') : policy;
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`prepare: cannot read the policy ${file} (${(e as Error).message}); use policy: compact or a file path`, { cause: e });
  }
}

/** Two tasks with the same gold actions (names and arguments) and the same expected answers ask for the same thing. */
export function taskSignature(task: SynthTask): string {
  const c = task.evaluation_criteria;
  return JSON.stringify([(c?.actions ?? []).map((a) => [a.name, a.arguments]), c?.communicate_info ?? []]);
}

export function preparePaths(dir: string): Omit<PreparedData, 'log' | 'reused'> {
  return { trainDir: join(dir, 'train'), validationDir: join(dir, 'validation'), trajectories: join(dir, 'expert.jsonl'), tokenizer: join(dir, 'tokenizer.json') };
}

export async function prepareRetailData(raw: unknown, options: { tools?: ToolSchemaStyle } = {}): Promise<PreparedData> {
  const r = PrepareSchema.safeParse(options.tools !== undefined && raw !== null && typeof raw === 'object' ? { ...raw, tools: options.tools } : raw);
  if (!r.success) throw new Error(`invalid retail.prepare section:\n${r.error.issues.map((i) => `  retail.prepare.${i.path.join('.')}: ${i.message}`).join('\n')}`);
  const spec = r.data;
  const paths = preparePaths(spec.dir);
  const marker = join(spec.dir, 'prepare.json');
  const specJson = JSON.stringify(spec, null, 2);
  if (existsSync(marker)) {
    if (readFileSync(marker, 'utf8') !== specJson) throw new Error(`prepare: ${spec.dir} was prepared with a different retail.prepare section (see ${marker}); delete the folder or use another dir`);
    return { ...paths, log: [`prepare: reusing ${spec.dir}`], reused: true };
  }
  const log: string[] = [];
  const t = spec.tasks;
  const sizes = { products: t.products ?? DEFAULT_WORLD_SIZES.products, users: t.users ?? DEFAULT_WORLD_SIZES.users, orders: t.orders ?? DEFAULT_WORLD_SIZES.orders };
  const difficulty: [number, number] = typeof t.difficulty === 'number' ? [t.difficulty, t.difficulty] : t.difficulty;
  const policy = policyText(t.policy);
  // Distinct world (and task) seeds per split, derived from the one seed.
  const splits = [
    { split: 'train', dir: paths.trainDir, seed: 2 * spec.seed + 1, count: t.train },
    { split: 'validation', dir: paths.validationDir, seed: 2 * spec.seed + 2, count: t.validation },
  ];
  const shared = t.world === 'shared';
  const generate = (s: (typeof splits)[number], worldSeed: number, count: number) =>
    generateTaskSet({ worldSeed, taskSeed: s.seed, count, sizes, families: t.families, difficulty, split: s.split });
  const trainSet = generate(splits[0], splits[0].seed, t.train);
  let valSet: SynthTaskSet;
  let duplicates = 0;
  if (shared) {
    // Over-generate on the training world, then drop the validation tasks that repeat a training task.
    const seen = new Set(trainSet.tasks.map(taskSignature));
    const candidates = generate(splits[1], splits[0].seed, 2 * t.validation + 16);
    const fresh = candidates.tasks.filter((task) => !seen.has(taskSignature(task)));
    duplicates = candidates.tasks.length - fresh.length;
    if (fresh.length < t.validation) throw new Error(`prepare: only ${fresh.length} validation tasks on the shared world differ from every training task (asked for ${t.validation}); use a larger world or fewer tasks`);
    valSet = { ...candidates, tasks: fresh.slice(0, t.validation), meta: { ...candidates.meta, count: t.validation } };
  } else {
    valSet = generate(splits[1], splits[1].seed, t.validation);
    assertDisjointWorlds([trainSet.meta, valSet.meta]);
  }
  const sets = [trainSet, valSet];
  sets.forEach((set, i) => {
    writeTaskSet(splits[i].dir, set, policy);
    const note = i === 1 && shared ? `, the training world; ${duplicates} generated tasks equal to a training task left out` : '';
    log.push(`prepare: ${set.tasks.length} ${splits[i].split} tasks (world seed ${set.meta.worldSeed}${note}, ${sizes.users} users, ${sizes.orders} orders, difficulty ${difficulty.join('-')}) → ${splits[i].dir}`);
  });

  const train = readTaskSet(paths.trainDir);
  const lines: string[] = [];
  const summary = await runRollouts({
    domain: train.domain, tasks: train.tasks, agent: makeAgent('expert'), user: makeUser('scripted'), trials: spec.expert.trials, seed: spec.expert.seed,
    onEpisode: (tr, task) => lines.push(JSON.stringify({ ...tr, family: task.longrun.family, difficulty: task.longrun.difficulty })),
  });
  mkdirSync(spec.dir, { recursive: true });
  writeFileSync(paths.trajectories, lines.join('\n') + '\n');
  log.push(`prepare: ${summary.episodes} expert trajectories (mean reward ${summary.metrics.avgReward.toFixed(3)}, success ${summary.metrics.successRate.toFixed(3)}) → ${paths.trajectories}`);

  const records = readTrajectoriesJsonl(paths.trajectories);
  const tokenizer = trainSftTokenizer(records, {
    vocabSize: spec.tokenizer.vocabSize, format: spec.tokenizer.format, ...conversationDefaults(train, spec.tools),
    ...(spec.tokenizer.digits === 'single' ? { pattern: SINGLE_DIGIT_PRETOKENIZE_PATTERN } : {}),
    ...(spec.tokenizer.digits === 'single-llama' ? { pattern: LLAMA_CPP_PRETOKENIZER_PATTERNS.starcoder } : {}),
    ...(spec.tokenizer.digits === 'groups-llama' ? { pattern: LLAMA_CPP_PRETOKENIZER_PATTERNS['llama-bpe'] } : {}),
    ...(spec.tokenizer.spaces === 'separate' ? (spec.tokenizer.digits === 'groups-llama' ? { separateSymbolsBeforeLetters: true } : { separateSpaceBeforeLetters: true }) : {}),
  });
  tokenizer.save(paths.tokenizer);
  log.push(`prepare: BPE tokenizer with ${tokenizer.vocabSize} tokens → ${paths.tokenizer}`);
  writeFileSync(marker, specJson);
  return { ...paths, log, reused: false };
}

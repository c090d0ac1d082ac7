/** The learned state of a byte-level BPE tokenizer, and its JSON file format (validated on load). */
import { readFileSync, writeFileSync } from 'node:fs';
import { z } from 'zod';
import { compilePretokenizer } from './pretokenize.ts';

export interface BpeModel {
  /** Merge i joins ids (a, b) into id 256 + i. Ids 0–255 are the bytes. */
  merges: [number, number][];
  /** Special tokens get ids 256 + merges.length + index. */
  specialTokens: string[];
  eosTokens: string[];
  /** Pre-tokenization regex source, compiled with flags `gu`. */
  pattern: string;
}

export const BPE_FILE_FORMAT = 'longrun-bpe';
export const BPE_FILE_VERSION = 1;

const bpeFileSchema = z.object({
  format: z.literal(BPE_FILE_FORMAT),
  version: z.literal(BPE_FILE_VERSION),
  pattern: z.string().min(1),
  merges: z.array(z.tuple([z.number().int().nonnegative(), z.number().int().nonnegative()])),
  specialTokens: z.array(z.string().min(1)),
  eosTokens: z.array(z.string().min(1)),
});

export type BpeFile = z.infer<typeof bpeFileSchema>;

export function bpeModelToFile(model: BpeModel): BpeFile {
  return { format: BPE_FILE_FORMAT, version: BPE_FILE_VERSION, ...model };
}

/** Checks the invariants zod cannot express: merges only reference earlier ids, specials are distinct, the regex compiles. */
export function validateBpeModel(model: BpeModel): void {
  model.merges.forEach(([a, b], i) => {
    const limit = 256 + i;
    if (a >= limit || b >= limit) throw new Error(`merge ${i} references id ${Math.max(a, b)}, which does not exist yet (ids must be < ${limit})`);
  });
  if (new Set(model.specialTokens).size !== model.specialTokens.length) throw new Error('special tokens are not distinct');
  for (const eos of model.eosTokens) {
    if (!model.specialTokens.includes(eos)) throw new Error(`eos token ${eos} is not a special token`);
  }
  compilePretokenizer(model.pattern);
}

/** Parses and validates a BPE file's JSON value; `source` names it in errors. */
export function bpeModelFromFile(value: unknown, source: string): BpeModel {
  const parsed = bpeFileSchema.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`);
    throw new Error(`${source} is not a valid ${BPE_FILE_FORMAT} v${BPE_FILE_VERSION} tokenizer file: ${issues.join('; ')}`);
  }
  const { merges, specialTokens, eosTokens, pattern } = parsed.data;
  const model = { merges, specialTokens, eosTokens, pattern };
  try {
    validateBpeModel(model);
  } catch (error) {
    throw new Error(`${source} is not a valid tokenizer file: ${(error as Error).message}`, { cause: error });
  }
  return model;
}

export function saveBpeModel(path: string, model: BpeModel): void {
  writeFileSync(path, JSON.stringify(bpeModelToFile(model)) + '\n');
}

export function loadBpeModel(path: string): BpeModel {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read tokenizer file ${path}: ${(error as Error).message}`, { cause: error });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`tokenizer file ${path} is not valid JSON (corrupt or truncated?): ${(error as Error).message}`, { cause: error });
  }
  return bpeModelFromFile(value, `tokenizer file ${path}`);
}

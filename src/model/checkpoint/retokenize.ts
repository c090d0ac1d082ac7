/**
 * Moving a checkpoint onto another byte-level BPE tokenizer: only the two vocabulary-sized matrices change, the
 * transformer blocks stay as they are.
 *
 * For each token of the new tokenizer:
 * - a special token (matched by name), or a token whose bytes the old tokenizer has as one token, keeps that token's
 *   rows of the embedding and of the output head;
 * - any other token (e.g. `784`, which a one-digit-per-token tokenizer writes `7` `8` `4`) gets the mean of its old
 *   pieces' embedding rows, so the blocks read roughly what they read before, and the output row of its first piece,
 *   so the head proposes it wherever the old model proposed that piece.
 * Continued training then learns what the new tokens mean. Averaging sub-token embeddings is the usual start for a
 * vocabulary transfer (Gee et al., 2022, "Fast Vocabulary Transfer for Language Model Compression").
 *
 * A mean forgets the order of the pieces (`784`, `487` and `748` would start alike, and `784` and `748` would share
 * the output row of `7` too), so `noise` > 0 adds seeded Gaussian noise of that fraction of the old matrix's RMS to
 * the rows of every averaged token, which tells them apart from the first step.
 */
import { applyMerges } from '../../llm/bpe-merge.ts';
import type { BpeModel } from '../../llm/bpe-model.ts';
import type { GptOssConfig } from '../config.ts';
import { CheckpointError } from './errors.ts';
import type { LoadedCheckpoint } from './hf.ts';
import { mulberry32 } from '../../engine/random.ts';

/**
 * Standard normal draws (Box–Muller, cosine branch only) from a seeded generator. Not `Mulberry32Rng.normal()`, whose
 * draws differ: `models/retail-pretrain-v3/` (in git history at commit 7b1041e) started from this stream, and its documented transplant command must
 * rebuild that start.
 */
function gaussian(seed: number): () => number {
  const u = mulberry32(seed);
  return () => Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u());
}

export interface Retokenized {
  config: GptOssConfig;
  params: LoadedCheckpoint['params'];
  /** New tokens that kept an old token's rows. */
  copied: number;
  /** New tokens initialised from several old pieces. */
  averaged: number;
}

/** The bytes of every non-special token of a BPE model, by id. */
function tokenBytes(model: BpeModel): number[][] {
  const out: number[][] = Array.from({ length: 256 }, (_, b) => [b]);
  for (const [x, y] of model.merges) out.push([...out[x], ...out[y]]);
  return out;
}

/** The checkpoint's parameters for tokenizer `to`, given that it was trained with tokenizer `from`. */
export function retokenizeCheckpoint(ckpt: Pick<LoadedCheckpoint, 'config' | 'params'>, from: BpeModel, to: BpeModel, options: { noise?: number; seed?: number } = {}): Retokenized {
  const noise = options.noise ?? 0;
  if (!(noise >= 0 && Number.isFinite(noise))) throw new CheckpointError('BAD_ARGUMENT', `noise must be a finite number >= 0, got ${noise}`);
  const seed = options.seed ?? 0;
  if (!Number.isInteger(seed)) throw new CheckpointError('BAD_ARGUMENT', `seed must be an integer, got ${seed}`);
  const H = ckpt.config.hidden_size, Vold = ckpt.config.vocab_size;
  const oldBytes = tokenBytes(from), newBytes = tokenBytes(to);
  const oldVocab = oldBytes.length + from.specialTokens.length, Vnew = newBytes.length + to.specialTokens.length;
  if (Vold !== oldVocab) throw new CheckpointError('BAD_ARGUMENT', `the checkpoint has vocab_size ${Vold}, but the tokenizer it is said to be trained with has ${oldVocab} tokens`);
  const oldIdOf = new Map(oldBytes.map((b, id) => [b.join(','), id]));
  const oldMerge = new Map(from.merges.map(([x, y], i) => [x * 2 ** 21 + y, 256 + i]));
  const embed = ckpt.params.get('model.embed_tokens.weight'), head = ckpt.params.get('lm_head.weight');
  if (!embed || !head) throw new CheckpointError('BAD_ARGUMENT', 'retokenize needs separate model.embed_tokens.weight and lm_head.weight tensors (tied embeddings are not supported)');
  const newEmbed = new Float32Array(Vnew * H), newHead = new Float32Array(Vnew * H);
  const rms = (m: Float32Array): number => Math.sqrt(m.reduce((a, v) => a + v * v, 0) / m.length);
  const embedScale = noise * rms(embed.data), headScale = noise * rms(head.data);
  const gauss = gaussian(seed);
  let copied = 0, averaged = 0;
  for (let t = 0; t < Vnew; t++) {
    let pieces: number[];
    if (t >= newBytes.length) {
      const name = to.specialTokens[t - newBytes.length];
      const k = from.specialTokens.indexOf(name);
      if (k < 0) throw new CheckpointError('BAD_ARGUMENT', `special token ${name} of the new tokenizer is not among the old one's`);
      pieces = [oldBytes.length + k];
    } else {
      const same = oldIdOf.get(newBytes[t].join(','));
      pieces = same !== undefined ? [same] : applyMerges(newBytes[t], (x, y) => oldMerge.get(x * 2 ** 21 + y));
    }
    if (pieces.length === 1) copied++;
    else averaged++;
    for (const p of pieces) for (let h = 0; h < H; h++) newEmbed[t * H + h] += embed.data[p * H + h] / pieces.length;
    newHead.set(head.data.subarray(pieces[0] * H, (pieces[0] + 1) * H), t * H);
    if (pieces.length > 1 && noise > 0) {
      for (let h = 0; h < H; h++) {
        newEmbed[t * H + h] += embedScale * gauss();
        newHead[t * H + h] += headScale * gauss();
      }
    }
  }
  const params: LoadedCheckpoint['params'] = new Map([...ckpt.params].map(([name, p]) => {
    if (name === 'model.embed_tokens.weight') return [name, { ...p, shape: [Vnew, H], data: newEmbed }];
    if (name === 'lm_head.weight') return [name, { ...p, shape: [Vnew, H], data: newHead }];
    return [name, p];
  }));
  return { config: { ...ckpt.config, vocab_size: Vnew }, params, copied, averaged };
}

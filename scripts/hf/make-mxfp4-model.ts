/**
 * Writes a small gpt-oss checkpoint with MXFP4 experts (as the released gpt-oss checkpoints store them) for the
 * parity check against Hugging Face's MXFP4 dequantiser: `scripts/hf/gpt_oss_mxfp4_reference.py` loads it with
 * transformers and writes what that library reads out of it.
 *
 *   node --import tsx scripts/hf/make-mxfp4-model.ts OUT_DIR
 */
import { presetConfig } from '../../src/model/config.ts';
import { saveModel } from '../../src/model/checkpoint/index.ts';
import { GptOssModel } from '../../src/model/model.ts';

const out = process.argv[2];
if (!out) throw new Error('usage: make-mxfp4-model.ts OUT_DIR');
// tiny-1m's shapes (hidden 96 and intermediate 128: multiples of the 32-value MXFP4 block), weights large enough
// that the experts matter for the logits
const config = presetConfig('tiny-1m', { initializer_range: 0.25, vocab_size: 300 });
const model = new GptOssModel(config, { seed: 5, grads: false });
const sinks = model.layers.map((L) => {
  if (L.attn.sinks === null) throw new Error('make-mxfp4-model: the model has no sinks');
  return L.attn.sinks;
});
for (const s of sinks) s.data().set(Array.from({ length: s.shape[0] }, (_, h) => (h % 2 === 0 ? 1 : -0.5)));
const { files } = saveModel(out, model, { mxfp4Experts: true });
console.log(`wrote ${files.join(', ')} to ${out}`);

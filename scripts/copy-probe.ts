/**
 * Copy probe: can a gpt-oss preset learn in-context copying from scratch, and how fast? Each document is k random
 * tokens (k = 8–24, drawn from `--alphabet` token ids), a separator, then the same k tokens again; the loss is on the
 * copy only. 16 rows × 128 tokens per step, AdamW, gradient clip 1. Prints the copy loss every 25 steps (uniform over
 * the alphabet is ln(alphabet); a model that copies goes towards 0).
 *
 *   node --import tsx scripts/copy-probe.ts --preset tiny-4m --steps 300 --lr 2e-3 --alphabet 32
 *     [--beta2 0.999] [--qk-scale 1] [--embed-scale 1] [--tied-init]
 *
 * `--qk-scale` / `--embed-scale` multiply the initial q/k projections / token embeddings; `--tied-init` starts
 * lm_head as a copy of the embedding (the parameters stay separate, as in gpt-oss).
 */
import { parseArgs } from 'node:util';
import { clipGradNorm, Mulberry32Rng } from '../src/engine/index.ts';
import { presetConfig } from '../src/model/config.ts';
import { GptOssModel } from '../src/model/model.ts';

const { values: a } = parseArgs({
  options: {
    preset: { type: 'string', default: 'tiny-4m' }, steps: { type: 'string', default: '300' }, lr: { type: 'string', default: '2e-3' },
    alphabet: { type: 'string', default: '2046' }, beta2: { type: 'string', default: '0.999' }, 'qk-scale': { type: 'string', default: '1' },
    'embed-scale': { type: 'string', default: '1' }, 'tied-init': { type: 'boolean', default: false },
  },
});
const V = 2048, SEP = 1, B = 16, T = 128;
const steps = Number(a.steps), lr = Number(a.lr), K = Number(a.alphabet), beta2 = Number(a.beta2);
const qkScale = Number(a['qk-scale']), embedScale = Number(a['embed-scale']);
if (!(Number.isInteger(steps) && steps > 0)) throw new Error(`--steps must be a positive integer, got ${a.steps}`);
if (!(lr > 0)) throw new Error(`--lr must be > 0, got ${a.lr}`);
if (!(Number.isInteger(K) && K >= 2 && K <= V - 2)) throw new Error(`--alphabet must be an integer in [2, ${V - 2}], got ${a.alphabet}`);
if (!(beta2 > 0 && beta2 < 1)) throw new Error(`--beta2 must be in (0, 1), got ${a.beta2}`);
if (!(qkScale > 0 && embedScale > 0)) throw new Error('--qk-scale and --embed-scale must be > 0');

const model = new GptOssModel(presetConfig(a.preset!, { vocab_size: V, max_position_embeddings: 8192 }), { seed: 0, tiedInit: a['tied-init'] });
const params = model.parameters();
for (const [name, t] of params) {
  const scale = /(q_proj|k_proj)\.weight$/.test(name) ? qkScale : name === 'model.embed_tokens.weight' ? embedScale : 1;
  if (scale !== 1) {
    const d = t.data();
    for (let i = 0; i < d.length; i++) d[i] *= scale;
  }
}
const opt = model.optimizer({ lr, weightDecay: 0.01, beta2 });
const grads = [...model.gradients().values()];
const rng = new Mulberry32Rng(1);
const t0 = performance.now();
console.log(`copy probe: ${a.preset}, alphabet ${K} (uniform ${Math.log(K).toFixed(3)} nats), lr ${lr}, beta2 ${beta2}, qk×${qkScale}, embed×${embedScale}${a['tied-init'] ? ', tied init' : ''}`);
for (let s = 1; s <= steps; s++) {
  const tokens = new Int32Array(B * T), targets = new Int32Array(B * T).fill(-1), lossMask = new Float32Array(B * T), docIds = new Int32Array(B * T);
  for (let b = 0; b < B; b++) {
    let at = 0, doc = 0;
    while (at < T) {
      const k = 8 + rng.int(17);
      if (at + 2 * k + 1 > T) {
        for (; at < T; at++) docIds[b * T + at] = doc;
        break;
      }
      const xs = Array.from({ length: k }, () => 2 + rng.int(K));
      const seq = [...xs, SEP, ...xs];
      seq.forEach((x, j) => { tokens[b * T + at + j] = x; docIds[b * T + at + j] = doc; });
      for (let j = k; j < 2 * k; j++) { targets[b * T + at + j] = seq[j + 1]; lossMask[b * T + at + j] = 1; }
      at += seq.length;
      doc++;
    }
  }
  model.zeroGrad();
  const r = model.forward({ tokens, targets, lossMask, batch: B, docIds });
  model.backward();
  clipGradNorm(grads, 1);
  opt.update();
  if (s % 25 === 0 || s === 1) console.log(`step ${s} copy loss ${r.loss.toFixed(3)} ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

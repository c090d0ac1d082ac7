/**
 * Parity with Hugging Face transformers' gpt-oss. `test/fixtures/hf-gpt-oss-tiny/` was written by transformers 5.17
 * (`scripts/hf/gpt_oss_reference.py`, eager attention, float32): a 4-layer model with sinks, GQA, a sliding window
 * of 8 over 40 tokens, YaRN, a 4-expert top-2 MoE whose SwiGLU clamp is reached, its `config.json` in transformers
 * 5's format (`rope_parameters`), and that library's logits, loss and gradient of every parameter. Our loader must
 * read the files as they are, and our model must give the same numbers.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { loadModel, readHfConfig, readSafetensors } from '../../src/model/checkpoint/index.ts';
import type { GptOssModel, ModelOptions } from '../../src/model/model.ts';

const DIR = new URL('../fixtures/hf-gpt-oss-tiny/', import.meta.url).pathname;
const meta = JSON.parse(readFileSync(`${DIR}meta.json`, 'utf8')) as { input_ids: number[][]; loss: number; transformers: string };
const reference = readSafetensors(`${DIR}reference.safetensors`).tensors;

function ref(name: string): Float32Array {
  const t = reference.get(name);
  assert.ok(t, `reference tensor ${name}`);
  return t.data as Float32Array;
}

/** max |a − b| / max |b|: the error relative to the tensor's scale. */
function relErr(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let diff = 0, scale = 0;
  for (let i = 0; i < a.length; i++) {
    diff = Math.max(diff, Math.abs(a[i] - b[i]));
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return diff / scale;
}

const rows = meta.input_ids.length, T = meta.input_ids[0].length;
const tokens = meta.input_ids.flat();
const targets = meta.input_ids.flatMap((row) => row.map((_, t) => (t + 1 < row.length ? row[t + 1] : -1)));

function run(options: Omit<ModelOptions, 'seed'>, fn: (m: GptOssModel) => void, dir = DIR): void {
  const model = loadModel(dir, options);
  try {
    fn(model);
  } finally {
    model.dispose();
  }
}

describe(`parity with transformers ${meta.transformers} gpt-oss`, () => {
  it('reads the config.json transformers 5 writes (rope_parameters)', () => {
    const c = readHfConfig(DIR);
    assert.equal(c.rope_theta, 10000);
    assert.deepEqual(c.rope_scaling, { rope_type: 'yarn', factor: 4, beta_fast: 32, beta_slow: 1, original_max_position_embeddings: 512, truncate: false });
    assert.deepEqual(c.layer_types, ['sliding_attention', 'full_attention', 'sliding_attention', 'full_attention']);
    assert.equal(c.sliding_window, 8);
  });

  for (const [label, options] of [
    ['reference ops', { impl: 'reference' }],
    ['Wasm kernels, flex attention', { impl: 'wasm', attention: 'flex', attnBlock: 16 }],
    ['Wasm kernels, eager attention', { impl: 'wasm', attention: 'eager' }],
  ] as const) {
    it(`gives transformers' logits and loss (${label})`, () => {
      run(options, (m) => {
        // Eager attention takes one sequence at a time (no document mask), so rows go in one by one there.
        const parts = options.attention === 'eager'
          ? meta.input_ids.map((_, r) => ({ tokens: tokens.slice(r * T, (r + 1) * T), batch: 1, targets: targets.slice(r * T, (r + 1) * T) }))
          : [{ tokens, batch: rows, targets }];
        const logits: number[] = [];
        let lossSum = 0;
        for (const part of parts) {
          const out = m.forward(part, { logits: true, grad: false });
          try {
            assert.equal(out.logits!.shape.join('x'), `${part.batch * T}x300`);
            logits.push(...out.logits!.data());
            lossSum += out.loss * out.tokenWeight;
          } finally {
            out.logits!.dispose();
          }
        }
        const err = relErr(logits, ref('logits'));
        assert.ok(err < 5e-5, `logits relative error ${err}`);
        const loss = lossSum / (rows * (T - 1));
        assert.ok(Math.abs(loss - meta.loss) < 1e-5 * meta.loss, `loss ${loss} vs ${meta.loss}`);
      });
    });
  }

  for (const [label, options] of [
    ['reference ops', { impl: 'reference', grads: true }],
    ['Wasm kernels, flex attention', { impl: 'wasm', attention: 'flex', attnBlock: 16, grads: true }],
  ] as const) {
    it(`gives transformers' gradient for every parameter (${label})`, () => {
      run(options, (m) => {
        m.zeroGrad();
        m.forward({ tokens, batch: rows, targets });
        m.backward();
        const grads = m.gradients();
        assert.equal(grads.size, [...reference.keys()].filter((k) => k.startsWith('grad.')).length);
        const worst: string[] = [];
        for (const [name, g] of grads) {
          const err = relErr(g.data(), ref(`grad.${name}`));
          if (!(err < 1e-4)) worst.push(`${name}: ${err.toExponential(2)}`);
        }
        assert.deepEqual(worst, []);
      });
    });
  }
});

/**
 * MXFP4: `test/fixtures/hf-gpt-oss-mxfp4/` holds a checkpoint our exporter wrote with MXFP4 experts, the way the
 * released gpt-oss checkpoints store them (scripts/hf/make-mxfp4-model.ts), and what transformers 5.17 read out of
 * it with its own dequantiser (`from_pretrained` with `Mxfp4Config(dequantize=True)`,
 * scripts/hf/gpt_oss_mxfp4_reference.py): the expert weights and the logits for fixed tokens. The same files through
 * our loader must give the same weights and logits, or our reading of the block/scale layout (and so of the real
 * checkpoints) would be wrong.
 */
describe('MXFP4 experts read like transformers reads them', () => {
  const MX = new URL('../fixtures/hf-gpt-oss-mxfp4/', import.meta.url).pathname;
  const mxMeta = JSON.parse(readFileSync(`${MX}mxfp4_meta.json`, 'utf8')) as { input_ids: number[][] };
  const mxRef = readSafetensors(`${MX}mxfp4_reference.safetensors`).tensors;

  it('gives the dequantised expert weights exactly', () => {
    run({ impl: 'wasm' }, (m) => {
      let compared = 0;
      for (const [name, t] of mxRef) {
        if (!name.includes('.mlp.experts.')) continue;
        const ours = m.param(name).data();
        assert.deepEqual(t.shape, m.param(name).shape.slice(), name);
        const theirs = t.data as Float32Array;
        let diff = 0;
        for (let i = 0; i < ours.length; i++) diff = Math.max(diff, Math.abs(ours[i] - theirs[i]));
        assert.equal(diff, 0, `${name} differs by up to ${diff}`);
        compared++;
      }
      assert.equal(compared, 2 * m.config.num_hidden_layers);
    }, MX);
  });

  it("gives transformers' logits", () => {
    run({ impl: 'wasm' }, (m) => {
      const ids = mxMeta.input_ids;
      const out = m.forward({ tokens: ids.flat(), batch: ids.length }, { logits: true, grad: false });
      try {
        const err = relErr(out.logits!.data(), mxRef.get('logits')!.data as Float32Array);
        assert.ok(err < 1e-4, `logits relative error ${err}`);
      } finally {
        out.logits!.dispose();
      }
    }, MX);
  });
});

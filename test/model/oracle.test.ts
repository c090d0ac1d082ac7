/**
 * The whole forward against an independent float64 re-derivation of gpt-oss written straight from the published
 * formulas (HF eager attention with the sink column, YaRN, MoE with interleaved gate/up), sharing no code with
 * src/model: pre-norm residuals, GQA head mapping, RoPE convention, sinks, window semantics, routing and clamps.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Mulberry32Rng } from '../../src/engine/index.ts';
import type { GptOssConfig } from '../../src/model/config.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { randomTokens, testConfig } from './helpers.ts';

type P = (name: string) => Float32Array;

function rmsnorm(x: Float64Array, w: Float32Array, eps: number): Float64Array {
  let ss = 0;
  for (const v of x) ss += v * v;
  const r = 1 / Math.sqrt(ss / x.length + eps);
  return x.map((v, i) => v * r * w[i]);
}

/** y = W x + b for W [out, in] (nn.Linear). */
function linear(x: Float64Array, W: Float32Array, b: Float32Array | null, out: number): Float64Array {
  const n = x.length, y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let s = b ? b[o] : 0;
    for (let i = 0; i < n; i++) s += W[o * n + i] * x[i];
    y[o] = s;
  }
  return y;
}

function oracleLogits(cfg: GptOssConfig, p: P, tokens: Int32Array): Float64Array[] {
  const C = cfg.hidden_size, d = cfg.head_dim, Hq = cfg.num_attention_heads, Hkv = cfg.num_key_value_heads, G = Hq / Hkv;
  const E = cfg.num_local_experts, K = cfg.num_experts_per_tok, I = cfg.intermediate_size, V = cfg.vocab_size;
  // YaRN, written out again
  const rs = cfg.rope_scaling!, half = d / 2;
  const corr = (rot: number) => (d * Math.log(rs.original_max_position_embeddings / (rot * 2 * Math.PI))) / (2 * Math.log(cfg.rope_theta));
  const lo = Math.max(0, corr(rs.beta_fast)), hi = Math.min(d - 1, corr(rs.beta_slow));
  const inv = Array.from({ length: half }, (_, k) => {
    const f = cfg.rope_theta ** ((2 * k) / d), ramp = Math.min(1, Math.max(0, (k - lo) / (hi - lo)));
    return (1 / (rs.factor * f)) * ramp + (1 / f) * (1 - ramp);
  });
  const conc = 0.1 * Math.log(rs.factor) + 1;
  const rope = (v: Float64Array, pos: number, heads: number) => {
    for (let h = 0; h < heads; h++) for (let k = 0; k < half; k++) {
      const c = Math.cos(pos * inv[k]) * conc, s = Math.sin(pos * inv[k]) * conc;
      const a = v[h * d + k], b = v[h * d + half + k];
      v[h * d + k] = a * c - b * s;
      v[h * d + half + k] = b * c + a * s;
    }
  };
  let xs = Array.from(tokens, (t) => Float64Array.from(p('model.embed_tokens.weight').subarray(t * C, (t + 1) * C)));
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const pre = `model.layers.${l}`;
    const sliding = cfg.layer_types[l] === 'sliding_attention';
    const hs = xs.map((x) => rmsnorm(x, p(`${pre}.input_layernorm.weight`), cfg.rms_norm_eps));
    const q = hs.map((h, t) => { const v = linear(h, p(`${pre}.self_attn.q_proj.weight`), p(`${pre}.self_attn.q_proj.bias`), Hq * d); rope(v, t, Hq); return v; });
    const k = hs.map((h, t) => { const v = linear(h, p(`${pre}.self_attn.k_proj.weight`), p(`${pre}.self_attn.k_proj.bias`), Hkv * d); rope(v, t, Hkv); return v; });
    const v = hs.map((h) => linear(h, p(`${pre}.self_attn.v_proj.weight`), p(`${pre}.self_attn.v_proj.bias`), Hkv * d));
    const sinks = p(`${pre}.self_attn.sinks`);
    const attn = xs.map((_, i) => {
      const o = new Float64Array(Hq * d);
      for (let h = 0; h < Hq; h++) {
        const g = Math.floor(h / G);
        const logits: number[] = [], js: number[] = [];
        for (let j = 0; j <= i; j++) {
          if (sliding && i - j >= cfg.sliding_window) continue;
          let s = 0;
          for (let e = 0; e < d; e++) s += q[i][h * d + e] * k[j][g * d + e];
          logits.push(s / Math.sqrt(d)); js.push(j);
        }
        logits.push(sinks[h]); // the sink column
        const m = Math.max(...logits), z = logits.reduce((a, s) => a + Math.exp(s - m), 0);
        js.forEach((j, n) => { const pr = Math.exp(logits[n] - m) / z; for (let e = 0; e < d; e++) o[h * d + e] += pr * v[j][g * d + e]; });
      }
      return linear(o, p(`${pre}.self_attn.o_proj.weight`), p(`${pre}.self_attn.o_proj.bias`), C);
    });
    xs = xs.map((x, i) => x.map((val, c) => val + attn[i][c]));
    xs = xs.map((x) => {
      const h = rmsnorm(x, p(`${pre}.post_attention_layernorm.weight`), cfg.rms_norm_eps);
      const r = linear(h, p(`${pre}.mlp.router.weight`), p(`${pre}.mlp.router.bias`), E);
      const order = Array.from({ length: E }, (_, e) => e).sort((a, b) => r[b] - r[a] || a - b).slice(0, K);
      const mx = r[order[0]], z = order.reduce((a, e) => a + Math.exp(r[e] - mx), 0);
      const out = Float64Array.from(x);
      for (const e of order) {
        const w = Math.exp(r[e] - mx) / z;
        const W1 = p(`${pre}.mlp.experts.gate_up_proj`).subarray(e * C * 2 * I, (e + 1) * C * 2 * I), b1 = p(`${pre}.mlp.experts.gate_up_proj_bias`).subarray(e * 2 * I, (e + 1) * 2 * I);
        const W2 = p(`${pre}.mlp.experts.down_proj`).subarray(e * I * C, (e + 1) * I * C), b2 = p(`${pre}.mlp.experts.down_proj_bias`).subarray(e * C, (e + 1) * C);
        const act = new Float64Array(I);
        for (let j = 0; j < I; j++) {
          let gate = b1[2 * j], up = b1[2 * j + 1];
          for (let c = 0; c < C; c++) { gate += h[c] * W1[c * 2 * I + 2 * j]; up += h[c] * W1[c * 2 * I + 2 * j + 1]; }
          gate = Math.min(gate, cfg.swiglu_limit);
          up = Math.min(Math.max(up, -cfg.swiglu_limit), cfg.swiglu_limit);
          act[j] = (up + 1) * gate / (1 + Math.exp(-1.702 * gate));
        }
        for (let c = 0; c < C; c++) {
          let y = b2[c];
          for (let j = 0; j < I; j++) y += act[j] * W2[j * C + c];
          out[c] += w * y;
        }
      }
      return out;
    });
  }
  return xs.map((x) => {
    const lg = linear(rmsnorm(x, p('model.norm.weight'), cfg.rms_norm_eps), p('lm_head.weight'), null, V);
    const m = Math.max(...lg), lz = Math.log(lg.reduce((a, s) => a + Math.exp(s - m), 0)) + m;
    return lg.map((s) => s - lz);
  });
}

for (const impl of ['wasm', 'reference'] as const) {
  test(`forward matches an independent float64 gpt-oss oracle (${impl}: window + full layers, sinks, biases, GQA, YaRN, MoE)`, () => {
    const cfg = testConfig({ initializer_range: 0.5 });
    const model = new GptOssModel(cfg, { impl, seed: 18, grads: false });
    const rng = new Mulberry32Rng(19);
    // random biases, sinks and norm weights so every term matters (the clamp itself is pinned in layers.test.ts)
    for (const [name, t] of model.parameters()) {
      if (/bias|sinks/.test(name) || name.endsWith('layernorm.weight') || name === 'model.norm.weight') t.data().forEach((_, i, a) => { a[i] = (name.includes('norm') ? 1 : 0) + rng.normal() * 0.5; });
    }
    const T = 13;
    const tokens = randomTokens(T, cfg.vocab_size, 20);
    const r = model.logprobs({ tokens }, { fullLogprobs: true });
    const got = r.fullLogprobs!.toArray();
    r.fullLogprobs!.dispose();
    const params = model.parameters();
    const want = oracleLogits(cfg, (n) => params.get(n)!.toArray(), tokens);
    let worst = 0;
    for (let t = 0; t < T; t++) for (let v = 0; v < cfg.vocab_size; v++) worst = Math.max(worst, Math.abs(got[t * cfg.vocab_size + v] - want[t][v]));
    assert.ok(worst < 2e-4, `max |Δ log p| = ${worst}`);
    model.dispose();
  });
}

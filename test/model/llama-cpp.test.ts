/**
 * The GGUF export checked against real llama.cpp (node-llama-cpp's prebuilt CPU build): it loads the file the CLI's
 * export writes, tokenizes text into our ids, and computes the same full-vocabulary log-probs on a sequence longer
 * than the sliding window, for a MoE and a dense preset, on weights far from a fresh init (random norms, biases,
 * sinks and router, so a swapped or transposed tensor shows). F32 KV cache and no flash attention: on these weights
 * llama.cpp's F16 KV cache alone moves log-probs by up to 2e-2, its defaults (F16 cache, flash attention) by 6e-2.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { getLlama, LlamaLogLevel, type Llama, type LlamaModel, type Token } from 'node-llama-cpp';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { DEFAULT_PRETOKENIZE_PATTERN, SINGLE_DIGIT_PRETOKENIZE_PATTERN } from '../../src/llm/pretokenize.ts';
import { presetConfig, type GptOssConfig } from '../../src/model/config.ts';
import { paramShapes } from '../../src/model/params.ts';
import { exportCommand, LLAMA_CPP_PRETOKENIZER_PATTERNS, logprobsCommand, saveCheckpoint, type NamedTensor } from '../../src/model/checkpoint/index.ts';
import { rng, tempDir } from './checkpoint-helpers.ts';

const tmp = tempDir('llama-cpp');
let llama: Llama;
before(async () => {
  // build: 'never' — a missing prebuilt binary is a failure here, not a silent source build or a skip.
  llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
});
after(async () => {
  await llama?.dispose();
  tmp.cleanup();
});

const WORDS = ['the', 'order', 'item', 'user', 'refund', 'cancel', 'exchange', 'address', 'payment', 'gift', 'card', 'shipped',
  'pending', 'delivered', 'price', 'total', 'I', "can't", "it's", "we'll", "you've", "they're", 'Hello', 'Thanks', 'OK', 'über',
  'café', 'naïve', 'Zürich', '東京', 'straße', 'résumé'];

/** Seeded sentences with words, ids, prices, punctuation, newlines and JSON-ish fragments. */
function corpus(seed: number, sentences: number): string {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
  const parts: string[] = [];
  for (let s = 0; s < sentences; s++) {
    const n = 3 + Math.floor(r() * 9);
    const words: string[] = [];
    for (let i = 0; i < n; i++) {
      const x = r();
      if (x < 0.12) words.push(`#W${Math.floor(r() * 1e7)}`);
      else if (x < 0.2) words.push(`$${(r() * 1000).toFixed(2)}`);
      else words.push(pick(WORDS));
    }
    parts.push(words.join(' ') + pick(['.', '!', '?', ',', ':', ' —', '\n', '\n\n', '  ', '", "']));
  }
  return parts.join(' ');
}

/** Random weights of useful size: a distribution far from uniform, every tensor (norms, biases, sinks) non-trivial. */
function usefulParams(config: GptOssConfig, seed: number, scale: number): Map<string, NamedTensor> {
  const r = rng(seed);
  const out = new Map<string, NamedTensor>();
  for (const [name, shape] of paramShapes(config)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    const norm = name.endsWith('layernorm.weight') || name === 'model.norm.weight';
    const s = scale * (norm ? 0.5 : name.endsWith('sinks') ? 1.5 : /bias$/.test(name) ? 0.35 : /embed|lm_head/.test(name) ? 1.7 : 0.26);
    for (let i = 0; i < n; i++) data[i] = (norm ? 1 : 0) + (r() * 2 - 1) * s;
    out.set(name, { dtype: 'F32', shape, data });
  }
  return out;
}

async function loadGguf(path: string): Promise<LlamaModel> {
  return llama.loadModel({ modelPath: path, gpuLayers: 0 });
}

/** llama.cpp's next-token distribution at every position, as log-probs [T][V]. */
async function llamaLogprobs(model: LlamaModel, tokens: readonly number[], V: number): Promise<Float64Array[]> {
  const context = await model.createContext({
    contextSize: 512, batchSize: 512, sequences: 1, threads: 1, flashAttention: false,
    experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32',
  });
  try {
    const sequence = context.getSequence();
    const out = await sequence.controlledEvaluate(tokens.map((t) => [t as Token, { generateNext: { probabilities: true } }]));
    return out.map((o, i) => {
      const probs = o?.next.probabilities;
      assert.ok(probs, `llama.cpp gave no probabilities at position ${i}`);
      const row = new Float64Array(V).fill(-Infinity);
      for (const [id, p] of probs) if (p > 0) row[id] = Math.log(p);
      return row;
    });
  } finally {
    await context.dispose();
  }
}

interface Exported { dir: string; gguf: string; tokenizer: BpeTokenizer; config: GptOssConfig }

/** Tokenizer with a pattern llama.cpp reproduces, a checkpoint of useful weights, and the CLI's GGUF export of it. */
function exportModel(label: string, preset: string, options: { pattern?: string; separateSpaces?: boolean; separateSymbols?: boolean; ggufPre?: string; scale?: number; overrides?: Partial<GptOssConfig>; allowYarnTruncate?: boolean } = {}): Exported {
  const tokenizer = BpeTokenizer.train(corpus(1, 3000), {
    vocabSize: 640, pattern: options.pattern ?? LLAMA_CPP_PRETOKENIZER_PATTERNS['gpt-2'], ...(options.separateSpaces ? { separateSpaceBeforeLetters: true } : {}),
    ...(options.separateSymbols ? { separateSymbolsBeforeLetters: true } : {}),
  });
  const config = presetConfig(preset, { vocab_size: tokenizer.vocabSize, ...options.overrides });
  const dir = join(tmp.dir, label);
  saveCheckpoint(dir, config, usefulParams(config, 11, options.scale ?? 0.5));
  const tokFile = join(tmp.dir, `${label}-tokenizer.json`);
  tokenizer.save(tokFile);
  const gguf = join(tmp.dir, `${label}.gguf`);
  const r = exportCommand(dir, { format: 'gguf', out: gguf, tokenizer: tokFile, allowYarnTruncate: options.allowYarnTruncate, ggufPre: options.ggufPre });
  assert.equal(r.warnings.length, (options.allowYarnTruncate ? 1 : 0) + (options.ggufPre ? 1 : 0), r.warnings.join('; '));
  return { dir, gguf, tokenizer, config };
}

function compare(ours: number[][], theirs: Float64Array[]): { maxAbs: number; perPosition: number[] } {
  const perPosition = ours.map((row, t) => {
    let m = 0;
    for (let v = 0; v < row.length; v++) {
      // Below e^-80 llama.cpp's float32 softmax underflows; such entries only need to be tiny on both sides.
      if (row[v] < -80) assert.ok(theirs[t][v] < -70, `position ${t} token ${v}: ours ${row[v]}, llama.cpp ${theirs[t][v]}`);
      else m = Math.max(m, Math.abs(row[v] - theirs[t][v]));
    }
    return m;
  });
  return { maxAbs: Math.max(...perPosition), perPosition };
}

/** Mean over positions of log V − entropy (0 for a uniform distribution). */
function meanGapToUniform(ours: number[][]): number {
  let total = 0;
  for (const row of ours) {
    let h = 0;
    for (const lp of row) h -= Math.exp(lp) * lp;
    total += Math.log(row.length) - h;
  }
  return total / ours.length;
}

describe('llama.cpp (node-llama-cpp 3.21.1) runs our GGUF export as the same model', () => {
  for (const preset of ['tiny-4m', 'tiny-1m-dense']) {
    it(`${preset}: full-vocabulary log-probs agree within 1e-3 past the sliding window`, async () => {
      const m = exportModel(preset, preset);
      const text = corpus(2, 200);
      const tokens = m.tokenizer.encode(text).slice(0, 3 * m.config.sliding_window);
      assert.equal(tokens.length, 3 * m.config.sliding_window);
      const ours = logprobsCommand(m.dir, tokens);
      const gap = meanGapToUniform(ours);
      assert.ok(gap > 1.5, `weights too close to uniform to tell mappings apart (log V − H = ${gap.toFixed(3)} nats)`);
      const model = await loadGguf(m.gguf);
      try {
        assert.deepEqual(model.tokenize(text, false).map(Number), m.tokenizer.encode(text), 'llama.cpp tokenizes the sample text into our ids');
        const { maxAbs, perPosition } = compare(ours, await llamaLogprobs(model, tokens, m.config.vocab_size));
        const late = Math.max(...perPosition.slice(m.config.sliding_window));
        console.log(`# ${preset}: ${tokens.length} tokens (window ${m.config.sliding_window}), V ${m.config.vocab_size}, log V − H ${gap.toFixed(2)} nats, `
          + `max |Δ log p| ${maxAbs.toExponential(2)} (past the window ${late.toExponential(2)})`);
        assert.ok(maxAbs <= 1e-3, `max |Δ log p| = ${maxAbs}`);
      } finally {
        await model.dispose();
      }
    });
  }

  it('a truncate: false export (allowed explicitly) is indeed another model in llama.cpp, as the exporter warns', async () => {
    const base = presetConfig('tiny-4m');
    const m = exportModel('untruncated', 'tiny-4m', { overrides: { rope_scaling: { ...base.rope_scaling!, truncate: false } }, allowYarnTruncate: true });
    const tokens = m.tokenizer.encode(corpus(2, 200)).slice(0, 3 * m.config.sliding_window);
    const model = await loadGguf(m.gguf);
    try {
      const { maxAbs } = compare(logprobsCommand(m.dir, tokens), await llamaLogprobs(model, tokens, m.config.vocab_size));
      console.log(`# tiny-4m with truncate: false: max |Δ log p| ${maxAbs.toFixed(3)}`);
      assert.ok(maxAbs > 1e-2, `expected a visible difference, got ${maxAbs}`);
    } finally {
      await model.dispose();
    }
  });

  const pool = ['a', 'Z', 'the', ' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', '\u000b', '\u00a0', '\u3000', '\u2028', '\u0085', '\ufeff',
    "'", "'s", "'S", "'ll", "'LL", "'ve", "'re", "'d", "'m", "'t", '0', '7', '42', '123', '4567', '89012', '½', '٣', '²',
    'é', 'e\u0301', 'ß', '中', '文字', '🙂', '🚀', '!', '?', '.', ',', '—', '$', '"', '(', ')', '-', '_', '#W', '{"a": 1}', '<', '|>'];
  const r = rng(5);
  const samples = Array.from({ length: 400 }, () => Array.from({ length: 1 + Math.floor(r() * 14) }, () => pool[Math.floor(r() * pool.length)]).join(''));
  samples.push(corpus(3, 50));
  /** The samples llama.cpp tokenizes into other ids than our tokenizer. */
  async function mismatches(m: Exported): Promise<string[]> {
    const model = await loadGguf(m.gguf);
    try {
      return samples.filter((s) => JSON.stringify(model.tokenize(s, false).map(Number)) !== JSON.stringify(m.tokenizer.encode(s)));
    } finally {
      await model.dispose();
    }
  }

  for (const pre of Object.keys(LLAMA_CPP_PRETOKENIZER_PATTERNS)) {
    it(`pre-tokenizer '${pre}': llama.cpp tokenizes ${samples.length} adversarial texts into exactly our ids`, async () => {
      const bad = await mismatches(exportModel(`tok-${pre}`, 'tiny-1m', { pattern: LLAMA_CPP_PRETOKENIZER_PATTERNS[pre] }));
      assert.deepEqual(bad.slice(0, 5).map((s) => JSON.stringify(s)), [], `${bad.length} of ${samples.length} samples tokenize differently`);
    });
  }

  it("pre-tokenizer 'starcoder' with spaces kept apart from letters (tokenizer.spaces: separate): llama.cpp gives exactly our ids", async () => {
    const m = exportModel('tok-starcoder-spaces', 'tiny-1m', { pattern: LLAMA_CPP_PRETOKENIZER_PATTERNS.starcoder, separateSpaces: true });
    assert.deepEqual(m.tokenizer.encode(' the'), [...m.tokenizer.encode(' '), ...m.tokenizer.encode('the')], 'the option is in effect');
    const bad = await mismatches(m);
    assert.deepEqual(bad.slice(0, 5).map((s) => JSON.stringify(s)), [], `${bad.length} of ${samples.length} samples tokenize differently`);
  });

  it("pre-tokenizer 'llama-bpe' with symbols kept apart from letters (tokenizer.digits: groups-llama): llama.cpp gives exactly our ids", async () => {
    const m = exportModel('tok-llama-bpe-symbols', 'tiny-1m', { pattern: LLAMA_CPP_PRETOKENIZER_PATTERNS['llama-bpe'], separateSymbols: true });
    assert.deepEqual(m.tokenizer.encode('"the'), [...m.tokenizer.encode('"'), ...m.tokenizer.encode('the')], 'the option is in effect');
    const bad = await mismatches(m);
    assert.deepEqual(bad.slice(0, 5).map((s) => JSON.stringify(s)), [], `${bad.length} of ${samples.length} samples tokenize differently`);
  });

  it('our own patterns have no exact llama.cpp counterpart (why the exporter refuses them unless --gguf-pre forces a name)', async () => {
    for (const [label, pattern, pre] of [['default', DEFAULT_PRETOKENIZE_PATTERN, 'gpt-2'], ['single-digit', SINGLE_DIGIT_PRETOKENIZE_PATTERN, 'starcoder']]) {
      const bad = await mismatches(exportModel(`tok-ours-${label}`, 'tiny-1m', { pattern, ggufPre: pre }));
      console.log(`# our ${label} pattern under llama.cpp '${pre}': ${bad.length} of ${samples.length} samples tokenize differently, e.g. ${JSON.stringify(bad[0])}`);
      assert.ok(bad.length > 0, `${label}: expected some text to tokenize differently`);
    }
  });

  it("llama.cpp refuses the name the exporter used to write ('gpt2'), so forcing it would not help", async () => {
    const m = exportModel('pre-check', 'tiny-1m');
    const bad = join(tmp.dir, 'gpt2-pre.gguf');
    const tokFile = join(tmp.dir, 'pre-check-tokenizer.json');
    const r = exportCommand(m.dir, { format: 'gguf', out: bad, tokenizer: tokFile, ggufPre: 'gpt2' });
    assert.match(r.warnings.join(' '), /'gpt2' is not a name whose splitting longrun knows/);
    await assert.rejects(loadGguf(bad));
  });
});

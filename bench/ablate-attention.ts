/**
 * Ablation: flex vs eager attention inside the retail SFT step. Two tiny-4m models with the same seed train on the
 * same retail expert episodes (one whole episode per step, assistant-token loss, AdamW): one with the sink-aware
 * flex kernel, one with eager attention that materialises every [heads, T, T] score/probability matrix. The loss
 * curves must agree within float tolerance (the two compute the same function in a different order); the table
 * reports the largest difference and each path's peak memory (forward + backward, engine accounting).
 *
 *   npm run bench:ablate-attention            (LONGRUN_BENCH_QUICK=1 for a smoke run)
 * Data: a small synthetic retail task set prepared like presets/retail-tiny.yaml (seed 2026, compact prompt) in a
 * temporary folder. Writes bench/results/ablate-attention.{json,md}.
 */
import { mkdtempSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clipGradNorm } from '../src/engine/index.ts';
import { createChatFormat, loadTokenizer } from '../src/llm/index.ts';
import { presetConfig } from '../src/model/config.ts';
import { GptOssModel } from '../src/model/model.ts';
import { readTaskSet } from '../src/domains/retail/synth/taskset.ts';
import { conversationDefaults, prepareRetailData } from '../src/rl/prepare.ts';
import { buildSftDocuments, readTrajectoriesJsonl } from '../src/rl/sftData.ts';

const QUICK = process.env.LONGRUN_BENCH_QUICK === '1';
const STEPS = QUICK ? 3 : 12;

const work = mkdtempSync(join(tmpdir(), 'longrun-ablate-'));
try {
  const data = await prepareRetailData({
    dir: join(work, 'data'), seed: 2026,
    tasks: { train: 64, validation: 4, difficulty: 1, policy: 'compact', users: 100, orders: 200 },
    tokenizer: { vocabSize: 2048, format: 'harmony' },
  }, { tools: 'compact' });
  const tokenizer = loadTokenizer(data.tokenizer);
  const format = createChatFormat('harmony', tokenizer);
  const { docs } = buildSftDocuments(readTrajectoriesJsonl(data.trajectories), format, { maxSeqLen: 8192, ...conversationDefaults(readTaskSet(data.trainDir), 'compact') });
  // Longest episodes first (they are what the memory wall is about); eager needs lengths divisible by 4.
  const order = docs.map((d, i) => ({ i, n: d.tokens.length })).sort((a, b) => b.n - a.n || a.i - b.i).map((x) => x.i);

  const cfg = presetConfig('tiny-4m', { vocab_size: tokenizer.vocabSize, max_position_embeddings: 8192 });
  const run = (attention: 'flex' | 'eager') => {
    const model = new GptOssModel(cfg, { seed: 0, attention });
    const opt = model.optimizer({ lr: 2e-3, weightDecay: 0.01 });
    const grads = [...model.gradients().values()];
    const steps: { step: number; tokens: number; loss: number; peakBytes: number; seconds: number }[] = [];
    for (let s = 0; s < STEPS; s++) {
      const doc = docs[order[s % order.length]];
      const T = doc.tokens.length - (doc.tokens.length % 4);
      const tokens = Int32Array.from(doc.tokens.subarray(0, T));
      const targets = new Int32Array(T).fill(-1);
      const lossMask = new Float32Array(T);
      for (let j = 0; j + 1 < T; j++) { targets[j] = tokens[j + 1]; lossMask[j] = doc.lossMask[j + 1]; }
      const t0 = performance.now();
      model.zeroGrad();
      const r = model.forward({ tokens, targets, lossMask, batch: 1 });
      model.backward();
      const peak = model.lastMemory?.peakBytes ?? 0;
      clipGradNorm(grads, 1);
      opt.update();
      steps.push({ step: s + 1, tokens: T, loss: r.loss, peakBytes: peak, seconds: (performance.now() - t0) / 1000 });
      console.log(`${attention} step ${s + 1}: T ${T}, loss ${r.loss.toFixed(5)}, peak ${(peak / 2 ** 20).toFixed(1)} MiB, ${((performance.now() - t0) / 1000).toFixed(2)} s`);
    }
    opt.dispose();
    model.dispose();
    return steps;
  };
  const flex = run('flex');
  const eager = run('eager');
  const diffs = flex.map((f, i) => Math.abs(f.loss - eager[i].loss));
  const rel = flex.map((f, i) => Math.abs(f.loss - eager[i].loss) / Math.abs(f.loss));
  const maxPeak = (xs: typeof flex) => Math.max(...xs.map((x) => x.peakBytes));
  const secs = (xs: typeof flex) => xs.reduce((a, x) => a + x.seconds, 0);
  const result = {
    preset: 'tiny-4m', steps: STEPS, quick: QUICK, longestTokens: Math.max(...flex.map((x) => x.tokens)),
    maxAbsLossDiff: Math.max(...diffs), maxRelLossDiff: Math.max(...rel),
    flex: { peakBytes: maxPeak(flex), seconds: secs(flex) }, eager: { peakBytes: maxPeak(eager), seconds: secs(eager) },
    curve: flex.map((f, i) => ({ step: f.step, tokens: f.tokens, flexLoss: f.loss, eagerLoss: eager[i].loss, flexPeakBytes: f.peakBytes, eagerPeakBytes: eager[i].peakBytes })),
  };
  const out = join(dirname(fileURLToPath(import.meta.url)), 'results');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'ablate-attention.json'), JSON.stringify(result, null, 2) + '\n');
  const mib = (b: number) => (b / 2 ** 20).toFixed(1);
  const md = [
    '# Ablation: flex vs eager attention in retail SFT (tiny-4m, one episode per step)',
    '',
    `\`npm run bench:ablate-attention\` — ${STEPS} steps, same seed and data, longest episode ${result.longestTokens} tokens.`,
    '',
    '| | flex | eager |',
    '|---|---:|---:|',
    `| peak memory, forward + backward (MiB) | ${mib(result.flex.peakBytes)} | ${mib(result.eager.peakBytes)} |`,
    `| time for all steps (s) | ${result.flex.seconds.toFixed(1)} | ${result.eager.seconds.toFixed(1)} |`,
    '',
    `Largest loss difference over the curve: ${result.maxAbsLossDiff.toExponential(2)} absolute, ${result.maxRelLossDiff.toExponential(2)} relative.`,
    '',
    '| step | tokens | flex loss | eager loss | flex peak (MiB) | eager peak (MiB) |',
    '|---:|---:|---:|---:|---:|---:|',
    ...result.curve.map((c) => `| ${c.step} | ${c.tokens} | ${c.flexLoss.toFixed(5)} | ${c.eagerLoss.toFixed(5)} | ${mib(c.flexPeakBytes)} | ${mib(c.eagerPeakBytes)} |`),
    '',
  ].join('\n');
  writeFileSync(join(out, 'ablate-attention.md'), md);
  console.log(md);
} finally {
  rmSync(work, { recursive: true, force: true });
}

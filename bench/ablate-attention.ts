/**
 * Ablation: flex vs eager attention inside the retail SFT step. A tiny-4m model trains on retail expert episodes
 * (one whole episode per step, assistant-token loss, AdamW) with the sink-aware flex kernel; at every step a second
 * model with eager attention (every [heads, T, T] score/probability matrix materialised) gets the same weights and
 * runs the same forward + backward. The loss curves must agree within float tolerance; the table reports the largest
 * differences (loss, gradient norm) and each path's peak memory (forward + backward, engine accounting).
 *
 *   npm run bench:ablate-attention            (LONGRUN_BENCH_QUICK=1 for a smoke run)
 * Data: a small synthetic retail task set prepared like presets/retail-tiny.yaml (seed 2026, compact prompt) in a
 * temporary folder. Writes bench/results/ablate-attention.{json,md}.
 */
import { mkdtempSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clipGradNorm, globalNorm } from '../src/engine/index.ts';
import { createChatFormat, loadTokenizer } from '../src/llm/index.ts';
import { presetConfig } from '../src/model/config.ts';
import { GptOssModel } from '../src/model/model.ts';
import { readTaskSet } from '../src/domains/retail/synth/taskset.ts';
import { conversationDefaults, prepareRetailData } from '../src/recipes/retail/prepare.ts';
import { buildSftDocuments, readTrajectoriesJsonl } from '../src/rl/sft-data.ts';

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
  // The flex model trains; at every step the eager model gets the flex model's current weights and runs the same
  // forward + backward, so the two loss curves are compared on identical weights. (Two independently trained copies
  // drift apart: MoE top-k routing turns float-rounding differences into different expert choices, and from-scratch
  // training at this learning rate amplifies them.)
  const flexModel = new GptOssModel(cfg, { seed: 0, attention: 'flex' });
  const eagerModel = new GptOssModel(cfg, { seed: 0, attention: 'eager' });
  const opt = flexModel.optimizer({ lr: 2e-3, weightDecay: 0.01 });
  const flexGrads = [...flexModel.gradients().values()];
  const eagerParams = eagerModel.parameters();
  const curve: { step: number; tokens: number; flexLoss: number; eagerLoss: number; flexGradNorm: number; eagerGradNorm: number; flexPeakBytes: number; eagerPeakBytes: number; flexSeconds: number; eagerSeconds: number }[] = [];
  for (let s = 0; s < STEPS; s++) {
    const doc = docs[order[s % order.length]];
    const T = doc.tokens.length - (doc.tokens.length % 4);
    const tokens = Int32Array.from(doc.tokens.subarray(0, T));
    const targets = new Int32Array(T).fill(-1);
    const lossMask = new Float32Array(T);
    for (let j = 0; j + 1 < T; j++) { targets[j] = tokens[j + 1]; lossMask[j] = doc.lossMask[j + 1]; }
    const pass = (model: GptOssModel) => {
      const t0 = performance.now();
      model.zeroGrad();
      const r = model.forward({ tokens, targets, lossMask, batch: 1 });
      model.backward();
      return { loss: r.loss, peak: model.lastMemory?.peakBytes ?? 0, seconds: (performance.now() - t0) / 1000, gradNorm: globalNorm([...model.gradients().values()]) };
    };
    for (const [name, p] of flexModel.parameters()) eagerParams.get(name)!.data().set(p.data());
    const f = pass(flexModel);
    const e = pass(eagerModel);
    clipGradNorm(flexGrads, 1);
    opt.update();
    curve.push({ step: s + 1, tokens: T, flexLoss: f.loss, eagerLoss: e.loss, flexGradNorm: f.gradNorm, eagerGradNorm: e.gradNorm, flexPeakBytes: f.peak, eagerPeakBytes: e.peak, flexSeconds: f.seconds, eagerSeconds: e.seconds });
    console.log(`step ${s + 1}: T ${T}, loss flex ${f.loss.toFixed(5)} eager ${e.loss.toFixed(5)}, grad norm ${f.gradNorm.toFixed(4)} / ${e.gradNorm.toFixed(4)}, peak ${(f.peak / 2 ** 20).toFixed(1)} / ${(e.peak / 2 ** 20).toFixed(1)} MiB`);
  }
  opt.dispose();
  flexModel.dispose();
  eagerModel.dispose();
  const rel = (a: number, b: number) => Math.abs(a - b) / Math.max(Math.abs(a), 1e-12);
  const result = {
    preset: 'tiny-4m', steps: STEPS, quick: QUICK, longestTokens: Math.max(...curve.map((c) => c.tokens)),
    maxAbsLossDiff: Math.max(...curve.map((c) => Math.abs(c.flexLoss - c.eagerLoss))),
    maxRelLossDiff: Math.max(...curve.map((c) => rel(c.flexLoss, c.eagerLoss))),
    maxRelGradNormDiff: Math.max(...curve.map((c) => rel(c.flexGradNorm, c.eagerGradNorm))),
    flex: { peakBytes: Math.max(...curve.map((c) => c.flexPeakBytes)), seconds: curve.reduce((a, c) => a + c.flexSeconds, 0) },
    eager: { peakBytes: Math.max(...curve.map((c) => c.eagerPeakBytes)), seconds: curve.reduce((a, c) => a + c.eagerSeconds, 0) },
    loadAvg1m: loadavg()[0],
    curve,
  };
  const mib = (b: number) => (b / 2 ** 20).toFixed(1);
  const out = join(dirname(fileURLToPath(import.meta.url)), 'results');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'ablate-attention.json'), JSON.stringify(result, null, 2) + '\n');
  const md = [
    '# Ablation: flex vs eager attention in retail SFT (tiny-4m, one episode per step)',
    '',
    `\`npm run bench:ablate-attention\` — ${STEPS} steps over the longest synthetic retail expert episodes (up to ${result.longestTokens} tokens; ` +
      'seed 2026, compact prompt). The flex model trains (AdamW, lr 2e-3); at every step the eager model receives its weights and runs the same ' +
      'forward + backward, so both curves are measured on identical weights. Peak = engine bytes during forward + backward.',
    '',
    '| | flex | eager |',
    '|---|---:|---:|',
    `| peak memory, forward + backward (MiB) | ${mib(result.flex.peakBytes)} | ${mib(result.eager.peakBytes)} |`,
    `| time for all steps (s; 1-min load ${result.loadAvg1m.toFixed(1)} at the end) | ${result.flex.seconds.toFixed(1)} | ${result.eager.seconds.toFixed(1)} |`,
    '',
    `Largest loss difference: ${result.maxAbsLossDiff.toExponential(2)} absolute (${result.maxRelLossDiff.toExponential(2)} relative); ` +
      `largest gradient-norm difference: ${result.maxRelGradNormDiff.toExponential(2)} relative.`,
    '',
    '| step | tokens | flex loss | eager loss | flex grad norm | eager grad norm | flex peak (MiB) | eager peak (MiB) |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...result.curve.map((c) => `| ${c.step} | ${c.tokens} | ${c.flexLoss.toFixed(5)} | ${c.eagerLoss.toFixed(5)} | ${c.flexGradNorm.toFixed(4)} | ${c.eagerGradNorm.toFixed(4)} | ${mib(c.flexPeakBytes)} | ${mib(c.eagerPeakBytes)} |`),
    '',
  ].join('\n');
  writeFileSync(join(out, 'ablate-attention.md'), md);
  console.log(md);
} finally {
  rmSync(work, { recursive: true, force: true });
}

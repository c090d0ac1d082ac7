/**
 * Reproducibility check for a run file's `curriculum`: runs its stages alone (fresh model from the run's policy,
 * the tokenizer and task sets of a prepared data folder) and compares the final weights with a reference model folder, such as the last stage of a
 * chain of `scripts/copy-drill.ts` runs. Prints each stage's drill loss and the largest absolute weight difference.
 *
 *   node --import tsx scripts/check-curriculum.ts --config presets/retail-tiny.yaml \
 *     --data runs/retail-tiny/data --reference MODEL_DIR --out runs/check-curriculum
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadModel } from '../src/model/checkpoint/index.ts';
import { runCopyCurriculum } from '../src/recipes/retail/copy-drill.ts';
import { loadRun } from '../src/recipes/load-run.ts';

const { values: a } = parseArgs({ options: { config: { type: 'string' }, data: { type: 'string' }, reference: { type: 'string' }, out: { type: 'string' } } });
if (!a.config || !a.data || !a.reference || !a.out) throw new Error('usage: --config RUN.yaml --data PREPARED_DIR --reference MODEL_DIR --out DIR');
for (const f of ['tokenizer.json', 'train', 'validation']) if (!existsSync(join(a.data, f))) throw new Error(`${a.data} is not a prepared data folder (no ${f})`);
if (!existsSync(join(a.reference, 'config.json'))) throw new Error(`${a.reference} is not a model folder (no config.json)`);
const { data, out } = a;
const { run, built } = await loadRun(a.config, {
  edit: (raw) => {
    const r = raw as Record<string, Record<string, unknown> | undefined>;
    if (!r.curriculum) throw new Error(`${a.config} has no curriculum section`);
    delete r.prepare;
    delete r.sft;
    r.policy = { ...r.policy, tokenizer: join(data, 'tokenizer.json') };
    r.taskOptions = { ...r.taskOptions, dataDir: join(data, 'train'), valDir: join(data, 'validation') };
    r.curriculum = { ...r.curriculum, outDir: out };
  },
});
if (!built.model) throw new Error('the config has no gpt-oss policy');
await runCopyCurriculum(run.curriculum!, { model: built.model, tokenizer: built.tokenizer, padId: built.deps.padId, log: console.log });
const reference = loadModel(a.reference).parameters();
let maxDiff = 0, n = 0;
for (const [name, t] of built.model.parameters()) {
  const ref = reference.get(name);
  if (!ref) throw new Error(`the reference model has no ${name}`);
  const x = t.toArray(), y = ref.toArray();
  if (x.length !== y.length) throw new Error(`${name}: ${x.length} weights here, ${y.length} in the reference`);
  for (let i = 0; i < x.length; i++) maxDiff = Math.max(maxDiff, Math.abs(x[i] - y[i]));
  n += x.length;
}
console.log(`compared ${n} weights with ${a.reference}: max |diff| = ${maxDiff}`);

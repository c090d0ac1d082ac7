/**
 * `--checkpoint DIR` (and `--baseline DIR`) of `longrun eval`: the model folder to load, from whichever folder of a
 * run the user has at hand:
 * - a model folder (`config.json` and `.safetensors` weights): `models/<name>`, an SFT stage's `model/`, or an SFT
 *   checkpoint `checkpoints/step-NNNNNNNN` (it holds the model files beside the optimizer and trainer state);
 * - a GRPO checkpoint step folder `step-NNNNNNNN` (trainer.ts): its `policy/model`;
 * - a GRPO checkpoint folder (`trainer.checkpointDir`) or its `latest` file: the step `latest` names, its `policy/model`;
 * - an SFT stage's output folder (`sft.outDir`, `longrun sft --out`): its `model/` when the stage finished, else its
 *   newest checkpoint.
 * Anything else is an error that lists what was looked for.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { grpoCheckpointDir } from '../rl/checkpoint-dirs.ts';
import { listCheckpoints } from '../rl/sft-checkpoint.ts';

/** A folder with a `config.json` and `.safetensors` weights. */
export function isModelFolder(dir: string): boolean {
  return existsSync(join(dir, 'config.json')) && statSync(dir).isDirectory() && readdirSync(dir).some((f) => f.endsWith('.safetensors'));
}

const isDir = (p: string) => existsSync(p) && statSync(p).isDirectory();

/** The GRPO checkpoint that the `latest` file in `root` names (its step number), as `policy/model`; null without one. */
function latestGrpoModel(root: string, flag: string): string | null {
  const latest = join(root, 'latest');
  if (!existsSync(latest) || !statSync(latest).isFile()) return null;
  const text = readFileSync(latest, 'utf8').trim();
  const step = Number(text);
  if (text === '' || !Number.isSafeInteger(step) || step < 0) throw new Error(`${flag} ${root}: ${latest} should hold the step number of the newest GRPO checkpoint but holds ${JSON.stringify(text.slice(0, 40))}`);
  const model = join(grpoCheckpointDir(root, step), 'policy', 'model');
  if (!isModelFolder(model)) throw new Error(`${flag} ${root}: ${latest} names step ${step}, but ${model} is not a model folder (config.json and .safetensors weights)`);
  return model;
}

/**
 * The model folder `path` stands for (see the file comment), and a line saying how it was found when it is not `path`
 * itself. The error names every place looked at.
 */
export function resolveModelFolder(path: string, flag = '--checkpoint'): { dir: string; note?: string } {
  if (!existsSync(path)) throw new Error(`${flag} ${path} does not exist`);
  if (isModelFolder(path)) return { dir: path };
  const found = (dir: string, what: string) => ({ dir, note: `${flag} ${path}: ${what}, the model in ${dir}` });
  // `runs/grpo/latest` given as it is: the checkpoint folder it belongs to.
  if (!isDir(path) && basename(path) === 'latest') {
    const model = latestGrpoModel(dirname(path), flag);
    if (model) return found(model, 'the newest GRPO checkpoint');
  }
  if (isDir(path)) {
    const policy = join(path, 'policy', 'model');
    if (isModelFolder(policy)) return found(policy, 'a GRPO checkpoint step folder');
    const latest = latestGrpoModel(path, flag);
    if (latest) return found(latest, 'a GRPO checkpoint folder (its latest step)');
    const sftModel = join(path, 'model');
    if (isModelFolder(sftModel)) return found(sftModel, "an SFT stage's folder (its final model)");
    const sftCheckpoints = listCheckpoints(join(path, 'checkpoints')).filter((c) => isModelFolder(c.dir));
    if (sftCheckpoints.length) return found(sftCheckpoints.at(-1)!.dir, "an SFT stage's folder (its newest checkpoint)");
  }
  throw new Error([
    `${flag} ${path}: no model found; looked for`,
    `  ${join(path, 'config.json')} with .safetensors weights beside it (a model folder, or an SFT checkpoint step-NNNNNNNN)`,
    `  ${join(path, 'policy', 'model')} (a GRPO checkpoint step folder)`,
    `  ${join(path, 'latest')} (a GRPO checkpoint folder: the step it names, its policy/model)`,
    `  ${join(path, 'model')} or ${join(path, 'checkpoints', 'step-NNNNNNNN')} (an SFT stage's output folder)`,
  ].join('\n'));
}

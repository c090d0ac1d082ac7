/**
 * The npm package as a user gets it (issue 49's acceptance): `npm pack`, install the tarball with production
 * dependencies only into a fresh folder outside the repository, import the package from an ES module and type-check
 * a TypeScript env module against its declarations, run the installed `longrun` command; then copy
 * examples/help-desk there and run the whole loop on it — demonstrations (`rollout --env`), SFT (`sft`), GRPO
 * (`train --config` on a run file naming the example's module), held-out evaluation (`eval`) — with no file of the
 * repository changed. Needs the npm registry.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { after, before, test } from 'node:test';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { REPO_ROOT } from '../helpers/paths.ts';
import { packedInstall, repoStatus, runLongrun, type PackedInstall } from './packed.ts';

let install: PackedInstall;
let statusBefore: string;
let work: string;

before(async () => {
  statusBefore = repoStatus();
  install = await packedInstall();
  work = mkdtempSync(join(install.dir, 'work-'));
}, { timeout: 16 * 60_000 });

after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

const DEV_ONLY = ['typescript', 'assemblyscript', 'eslint', 'playwright-core', 'node-llama-cpp', '@huggingface/gguf', '@huggingface/jinja', '@bufbuild/buf', 'typescript-eslint'];

test('the tarball holds the compiled package, the Wasm kernels and no sources', () => {
  const r = spawnSync('tar', ['tzf', install.tarball], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const files = new Set(r.stdout.split('\n').filter(Boolean));
  for (const f of ['package/package.json', 'package/bin/longrun', 'package/dist/index.js', 'package/dist/index.d.ts', 'package/dist/cli/main.js',
    'package/dist/engine/pool-worker.mjs', 'package/build/longrun.wasm', 'package/build/longrun.relaxed.wasm', 'package/README.md']) {
    assert.ok(files.has(f), `${f} is missing from the tarball`);
  }
  for (const f of files) assert.doesNotMatch(f, /^package\/(src|test|models|docs|bench|assembly|presets|runs|examples|clients)\//, `${f} should not be in the tarball`);
  const declarations = [...files].filter((f) => f.endsWith('.d.ts'));
  assert.ok(declarations.length > 50, `only ${declarations.length} declaration files`);
});

test('the install has production dependencies only', () => {
  for (const name of DEV_ONLY) assert.equal(existsSync(join(install.dir, 'node_modules', name)), false, `dev dependency ${name} was installed`);
  const pkg = JSON.parse(readFileSync(join(install.dir, 'node_modules', 'longrun', 'package.json'), 'utf8')) as { exports: Record<string, unknown> };
  assert.deepEqual(Object.keys(pkg.exports), ['.', './package.json']);
});

test('an ES module imports the public API; internals are not exported', () => {
  const file = join(work, 'consumer.mjs');
  writeFileSync(file, [
    "import * as longrun from 'longrun';",
    "import { defineEnv, tool, rewards, EpisodeError, mcpServer, scriptedUser } from 'longrun';",
    "import { z } from 'zod';",
    "const env = defineEnv({ id: 'consumer/echo-v0', instructions: 'Echo.', tasks: [{ id: 't0', prompt: 'hi' }],",
    "  tools: [tool({ name: 'echo', description: 'Echo.', parameters: z.object({ text: z.string() }), run: ({ text }) => text })],",
    "  reward: rewards.checks([{ name: 'called', check: (ep) => ep.toolCalls.length > 0 }]) });",
    "const tasks = await env.tasks('train');",
    "let internal = 'exported';",
    "try { await import('longrun/dist/cli/main.js'); } catch (e) { internal = e.code; }",
    "console.log(JSON.stringify({ keys: Object.keys(longrun).sort(), tasks: tasks.length, id: env.id, internal,",
    "  kinds: [typeof tool, typeof mcpServer, typeof scriptedUser, typeof EpisodeError] }));",
  ].join('\n'));
  const r = spawnSync(process.execPath, [file], { cwd: work, encoding: 'utf8', timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '' } });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  const out = JSON.parse(r.stdout.trim().split('\n').pop()!) as { keys: string[]; tasks: number; id: string; internal: string; kinds: string[] };
  assert.equal(out.tasks, 1);
  assert.equal(out.id, 'consumer/echo-v0');
  assert.equal(out.internal, 'ERR_PACKAGE_PATH_NOT_EXPORTED');
  assert.deepEqual(out.kinds, ['function', 'function', 'function', 'function']);
  for (const k of ['defineEnv', 'tool', 'rewards', 'EpisodeError', 'mcpServer', 'scriptedUser', 'llmUser']) assert.ok(out.keys.includes(k), `longrun does not export ${k}`);
});

test('a TypeScript env module type-checks against the installed declarations', () => {
  cpSync(join(REPO_ROOT, 'examples', 'help-desk', 'env.ts'), join(work, 'typed-env.ts'));
  // A deliberate type error beside it proves the check reads the declarations (an `any` import would pass anything).
  writeFileSync(join(work, 'bad-env.ts'), "import { tool } from 'longrun';\nimport { z } from 'zod';\nexport const t = tool({ name: 'x', description: 'x', parameters: z.object({ n: z.number() }), run: ({ n }) => n.toUpperCase() });\n");
  const tsconfig = { compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: true, types: [] } };
  writeFileSync(join(work, 'tsconfig.json'), JSON.stringify({ ...tsconfig, files: ['typed-env.ts'] }));
  writeFileSync(join(work, 'tsconfig.bad.json'), JSON.stringify({ ...tsconfig, files: ['bad-env.ts'] }));
  const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const good = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: work, encoding: 'utf8', timeout: 180_000 });
  assert.equal(good.status, 0, `the example does not type-check against the package:\n${good.stdout}${good.stderr}`);
  const bad = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.bad.json'], { cwd: work, encoding: 'utf8', timeout: 180_000 });
  assert.notEqual(bad.status, 0, 'a wrong tool body type-checked');
  assert.match(bad.stdout, /toUpperCase/);
});

test('the installed longrun command runs with plain Node', () => {
  const r = runLongrun(install, ['--help']);
  assert.equal(r.code, 0, r.out);
  for (const cmd of ['rollout', 'sft', 'train', 'eval']) assert.match(r.out, new RegExp(`\\n\\s+${cmd} `), `--help lists no ${cmd} command`);
  const v = runLongrun(install, ['--version']);
  assert.equal(v.code, 0, v.out);
  assert.equal(v.stdout.trim(), (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version);
});

/** JSON lines of a file. */
const jsonLines = (file: string): Record<string, unknown>[] => readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as Record<string, unknown>);

test('examples/help-desk: rollout, sft, train and eval run from the installed package', { timeout: 12 * 60_000 }, () => {
  // The example and its start model, laid out as in the repository (its run files name ../../models/retail-base).
  const root = join(work, 'repo-layout');
  const dir = join(root, 'examples', 'help-desk');
  const example = join(REPO_ROOT, 'examples', 'help-desk');
  cpSync(example, dir, { recursive: true, filter: (p) => relative(example, p).split(sep)[0] !== 'runs' });
  const start = join(root, 'models', 'retail-base');
  mkdirSync(start, { recursive: true });
  for (const f of ['config.json', 'model.safetensors', 'tokenizer.json']) copyFileSync(join(REPO_ROOT, 'models', 'retail-base', f), join(start, f));
  mkdirSync(join(dir, 'runs'));
  const longrun = (args: string[], timeoutMs = 5 * 60_000) => {
    const r = runLongrun(install, args, { cwd: dir, timeoutMs });
    assert.equal(r.code, 0, `longrun ${args.join(' ')} failed:\n${r.out.slice(-6000)}`);
    return r;
  };

  // Demonstrations: the example's own .ts module, loaded by the compiled CLI.
  const demo = longrun(['rollout', '--env', './env.ts', '--split', 'train', '--limit', '24', '--out', 'runs/demos.jsonl', '--no-progress']);
  assert.match(demo.out, /mean reward 1\.0000/);
  const demos = jsonLines(join(dir, 'runs', 'demos.jsonl'));
  assert.equal(demos.length, 24);
  assert.ok(demos.every((d) => d.reward === 1 && typeof d.systemPrompt === 'string' && Array.isArray(d.tools)), 'every demonstration scores 1 and carries its prompt and tools');

  // `longrun sft`: a fresh tiny model and tokenizer, two steps.
  longrun(['sft', '--data', 'runs/demos.jsonl', '--preset', 'tiny-1m', '--vocab-size', '512', '--steps', '2', '--seq-len', '1024', '--micro-batch-tokens', '4096', '--out', 'runs/sft-fresh', '--no-progress']);
  for (const f of ['model/config.json', 'model/model.safetensors', 'tokenizer.json']) assert.ok(existsSync(join(dir, 'runs', 'sft-fresh', f)), `sft wrote no ${f}`);
  const sftSteps = jsonLines(join(dir, 'runs', 'sft-fresh', 'metrics.jsonl')).filter((m) => m.type === 'train');
  assert.equal(sftSteps.length, 2);
  assert.ok(sftSteps.every((m) => Number.isFinite(m.loss)), 'sft losses are numbers');

  // The example's SFT run file (from the pretrained start), cut to two steps.
  const sftRun = parseYaml(readFileSync(join(dir, 'sft.yaml'), 'utf8')) as { sft: { config: Record<string, unknown> } };
  sftRun.sft.config.steps = 2;
  writeFileSync(join(dir, 'sft-short.yaml'), stringifyYaml(sftRun));
  longrun(['train', '--config', 'sft-short.yaml']);
  assert.ok(existsSync(join(dir, 'runs', 'sft', 'model', 'model.safetensors')), 'the SFT stage wrote no model');

  // GRPO: the example's run file as it is (it names ./env.ts and the SFT model), one step.
  longrun(['train', '--config', 'grpo.yaml', '--steps', '1'], 8 * 60_000);
  const grpo = join(dir, 'runs', 'grpo');
  assert.equal(readFileSync(join(grpo, 'latest'), 'utf8').trim(), '1');
  assert.ok(existsSync(join(grpo, 'step-00000001')), 'no checkpoint of step 1');
  const steps = jsonLines(join(grpo, 'metrics.jsonl'));
  const step1 = steps.find((m) => m.step === 1 && m['reward/mean'] !== undefined);
  assert.ok(step1, `no training metrics for step 1 in ${JSON.stringify(steps).slice(0, 400)}`);
  assert.ok(Number.isFinite(step1['reward/mean']), "the step's mean reward is a number");
  const episodes = jsonLines(join(grpo, 'episodes.jsonl'));
  assert.ok(episodes.some((e) => e.kind === 'train'), 'no training episodes recorded');
  assert.ok(episodes.every((e) => e.reward === 0 || e.reward === 1), 'the final-state reward is 0 or 1');

  // Held-out evaluation of the checkpoint on the test split.
  const ev = longrun(['eval', '--config', 'grpo.yaml', '--checkpoint', join('runs', 'grpo', 'step-00000001', 'policy', 'model'), '--split', 'test', '--trials', '1', '--out', 'runs/eval']);
  assert.match(ev.out, /mean reward [01]\.\d{4}/);
  const evalEpisodes = jsonLines(join(dir, 'runs', 'eval', 'trajectories.jsonl'));
  assert.equal(evalEpisodes.length, 48, 'one episode per test task');
  assert.ok(evalEpisodes.every((e) => e.reward === 0 || e.reward === 1), 'the final-state reward is 0 or 1');
  assert.ok(existsSync(join(dir, 'runs', 'eval', 'summary.json')), 'eval wrote no summary');
});

test('no file of the repository changed', () => {
  assert.equal(repoStatus(), statusBefore);
});

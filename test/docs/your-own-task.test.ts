/**
 * docs/your-own-task.md, executed as written against the packed package: every fenced code block of the guide, in
 * order, in a fresh folder outside the repository that holds only the tarball (`npm pack`'s, as the guide's first
 * step says). A `sh` block runs in bash (`-e -o pipefail`: it stops at the first failing command); a file block (`ts`, `yaml`, `json`,
 * `js`, `mjs`) is written to the file its first line names (`// env.ts`, `# grpo.yaml`). A block in any other
 * language fails the test, so the guide holds nothing that is not run. Then the files the guide promises are checked:
 * the demonstrations, the SFT model, the GRPO checkpoint and the evaluation's per-episode results.
 * Needs the npm registry (the guide runs `npm install`).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { REPO_ROOT } from '../helpers/paths.ts';
import { packedInstall, repoStatus } from '../package/packed.ts';

const GUIDE = join(REPO_ROOT, 'docs', 'your-own-task.md');

export interface CodeBlock {
  lang: string;
  body: string;
  /** 1-based line of the opening fence. */
  line: number;
}

/** The fenced code blocks of a Markdown text (``` or ~~~ fences, at the start of a line). */
export function codeBlocks(markdown: string): CodeBlock[] {
  const lines = markdown.split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(```+|~~~+)\s*([\w-]*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const fence = open[1]!;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !lines[j]!.startsWith(fence)) body.push(lines[j++]!);
    if (j >= lines.length) throw new Error(`${basename(GUIDE)}:${i + 1}: a code block is never closed`);
    blocks.push({ lang: open[2]!, body: `${body.join('\n')}\n`, line: i + 1 });
    i = j;
  }
  return blocks;
}

const FILE_LANGS: Record<string, RegExp> = {
  ts: /^\/\/\s*(\S+\.(?:ts|mts))\s*$/,
  js: /^\/\/\s*(\S+\.(?:js|mjs))\s*$/,
  mjs: /^\/\/\s*(\S+\.mjs)\s*$/,
  yaml: /^#\s*(\S+\.ya?ml)\s*$/,
  json: /^\/\/\s*(\S+\.json)\s*$/,
};

let folder: string;
let statusBefore: string;
const ran: { block: CodeBlock; seconds: number; out: string }[] = [];

before(async () => {
  statusBefore = repoStatus();
  const install = await packedInstall();
  folder = mkdtempSync(join(tmpdir(), 'longrun-guide-'));
  copyFileSync(install.tarball, join(folder, basename(install.tarball)));
}, { timeout: 16 * 60_000 });

after(() => {
  if (folder) rmSync(folder, { recursive: true, force: true });
});

test('the guide has code blocks, each a shell block or a named file', () => {
  const blocks = codeBlocks(readFileSync(GUIDE, 'utf8'));
  assert.ok(blocks.length >= 6, `only ${blocks.length} code blocks`);
  for (const b of blocks) {
    if (b.lang === 'sh') continue;
    const re = FILE_LANGS[b.lang];
    assert.ok(re, `${basename(GUIDE)}:${b.line}: a \`${b.lang || '(no language)'}\` block is neither sh nor a file block the test can run`);
    assert.match(b.body.split('\n')[0]!, re, `${basename(GUIDE)}:${b.line}: a ${b.lang} block must start with a comment naming its file`);
  }
});

test('every code block of the guide runs as written against the packed package', { timeout: 20 * 60_000 }, () => {
  // Parent npm settings must not steer the guide's npm; BASH_ENV would make bash read a start-up file first.
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_') && k !== 'BASH_ENV')), NODE_OPTIONS: '' };
  for (const block of codeBlocks(readFileSync(GUIDE, 'utf8'))) {
    const where = `${basename(GUIDE)}:${block.line}`;
    const t0 = performance.now();
    if (block.lang === 'sh') {
      const r = spawnSync('bash', ['-eo', 'pipefail', '-c', block.body], { cwd: folder, env, encoding: 'utf8', timeout: 10 * 60_000, maxBuffer: 64 * 1024 * 1024 });
      const out = `${r.stdout}${r.stderr}`;
      assert.equal(r.status, 0, `${where}: the block failed (exit ${r.status ?? r.signal}):\n${block.body}\n--- output ---\n${out.slice(-6000)}`);
      ran.push({ block, seconds: (performance.now() - t0) / 1000, out });
    } else {
      const name = FILE_LANGS[block.lang]!.exec(block.body.split('\n')[0]!)![1]!;
      mkdirSync(dirname(join(folder, name)), { recursive: true });
      writeFileSync(join(folder, name), block.body);
      ran.push({ block, seconds: 0, out: '' });
    }
  }
  assert.ok(ran.some((r) => r.block.lang === 'sh'), 'no shell block ran');
});

test('the guide leaves a trained, evaluated checkpoint', () => {
  const blocks = codeBlocks(readFileSync(GUIDE, 'utf8'));
  assert.equal(ran.length, blocks.length, `only ${ran.length} of the guide's ${blocks.length} blocks ran`);
  // What the guide's steps write (its text names these paths).
  const demos = readFileSync(join(folder, 'runs', 'demos.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { reward: number });
  assert.ok(demos.length > 0 && demos.every((d) => d.reward === 1), 'the demonstrations should all score 1');
  assert.ok(existsSync(join(folder, 'runs', 'sft', 'model', 'config.json')), 'no SFT model');
  assert.ok(existsSync(join(folder, 'runs', 'sft', 'tokenizer.json')), 'no SFT tokenizer');
  const grpo = join(folder, 'runs', 'grpo');
  const metrics = readFileSync(join(grpo, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.ok(metrics.length > 0, 'GRPO wrote no metrics');
  const latest = readFileSync(join(grpo, 'latest'), 'utf8').trim();
  assert.ok(existsSync(join(grpo, `step-${latest.padStart(8, '0')}`, 'policy', 'model', 'model.safetensors')), `no policy weights at the latest GRPO step (${latest}) in ${readdirSync(grpo).join(', ')}`);
  for (const name of ['grpo', 'sft']) {
    const episodes = readFileSync(join(folder, 'runs', 'eval', name, 'trajectories.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { reward: number });
    assert.equal(episodes.length, 9 * 4, `eval ${name}: the 9 test tasks, 4 samples each`);
    assert.ok(episodes.every((e) => e.reward >= 0 && e.reward <= 1), `eval ${name}: rewards are shares of checks`);
  }
  const evalOut = ran.map((r) => r.out).join('\n');
  assert.match(evalOut, /mean reward [01]\.\d{4} ± \d\.\d{4}/, 'the evaluation printed no mean reward');
});

test('the guide changed no file of the repository', () => {
  assert.equal(repoStatus(), statusBefore);
});

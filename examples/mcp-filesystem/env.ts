/**
 * mcp-filesystem: an agent that creates, moves, renames and edits files through a real MCP server —
 * `@modelcontextprotocol/server-filesystem`
 * (https://github.com/modelcontextprotocol/servers/tree/main/src/filesystem), started fresh for every episode with the
 * episode's own temp folder as its only allowed directory (paths may be given relative to it).
 *
 * The episode's state is that folder, made and filled with the task's starting files before the server starts and
 * removed after the episode. The reward reads the folder's end state from disk and compares what the episode changed
 * with what the task asks to change, entry by entry (a directory, or a file with its exact content; added or
 * removed): the F1 of the two sets of changes, 0 for an agent that changes nothing, 1 exactly when the folder ends as
 * expected. The demonstrator plays the gold tool calls (SFT data).
 *
 * Load it with `longrun rollout --env ./env.ts`, or from a run file: `env: { module: ./env.ts }`.
 * Outside this repository, install the server next to longrun: `npm install @modelcontextprotocol/server-filesystem`.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { defineEnv, mcpServer, type DemoTurn, type Task } from 'longrun';

// ---- tasks -------------------------------------------------------------------------------------------------------

/** A folder: relative paths of directories (ending in `/`) and of files, with their content. */
export type Tree = Record<string, string | null>;

type Family = 'create' | 'move' | 'rename' | 'edit';

export interface FilesTask extends Task {
  family: Family;
  prompt: string;
  /** The folder the episode starts with. */
  initial: Tree;
  /** The folder a perfect agent leaves. */
  expected: Tree;
  /** The gold turns: each a list of tool calls. */
  gold: { name: string; arguments: Record<string, unknown> }[][];
}

const FOLDERS = ['notes', 'drafts', 'archive', 'docs', 'reports', 'old'];
const STEMS = ['todo', 'ideas', 'plan', 'budget', 'minutes', 'summary', 'letter', 'recipe', 'log', 'report'];
const LINES = ['buy milk', 'call the bank', 'book the flight', 'water the plants', 'send the invoice', 'fix the bike', 'renew the passport', 'pay the rent'];
const KEYS = ['port', 'timeout', 'retries', 'workers'];

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = <X>(r: () => number, xs: readonly X[]): X => xs[Math.floor(r() * xs.length)]!;
function two<X>(r: () => number, xs: readonly X[]): [X, X] {
  const a = pick(r, xs);
  let b = pick(r, xs);
  while (b === a) b = pick(r, xs);
  return [a, b];
}
const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });

function makeTask(split: string, i: number, r: () => number): FilesTask {
  const id = `${split}-${String(i).padStart(3, '0')}`;
  const family = pick(r, ['create', 'move', 'rename', 'edit'] as const);
  const [folder, other] = two(r, FOLDERS);
  const [stem, stem2] = two(r, STEMS);
  const line = pick(r, LINES);
  // Every folder starts with one unrelated file, which must be left alone.
  const bystander: Tree = { [`${other}/`]: null, [`${other}/${stem2}.txt`]: `${pick(r, LINES)}\n` };
  if (family === 'create') {
    const path = `${folder}/${stem}.txt`;
    return {
      id, family, prompt: `Create the file ${path} containing the line: ${line}`,
      initial: bystander, expected: { ...bystander, [`${folder}/`]: null, [path]: `${line}\n` },
      gold: [[call('create_directory', { path: folder })], [call('write_file', { path, content: `${line}\n` })]],
    };
  }
  if (family === 'move') {
    const content = `${line}\n`;
    return {
      id, family, prompt: `Move ${stem}.txt into the ${folder} folder.`,
      initial: { ...bystander, [`${folder}/`]: null, [`${stem}.txt`]: content },
      expected: { ...bystander, [`${folder}/`]: null, [`${folder}/${stem}.txt`]: content },
      gold: [[call('move_file', { source: `${stem}.txt`, destination: `${folder}/${stem}.txt` })]],
    };
  }
  if (family === 'rename') {
    const year = 2020 + Math.floor(r() * 7);
    const content = `${line}\n`;
    return {
      id, family, prompt: `Rename ${folder}/${stem}-draft.md to ${folder}/${stem}-${year}.md.`,
      initial: { ...bystander, [`${folder}/`]: null, [`${folder}/${stem}-draft.md`]: content },
      expected: { ...bystander, [`${folder}/`]: null, [`${folder}/${stem}-${year}.md`]: content },
      gold: [[call('move_file', { source: `${folder}/${stem}-draft.md`, destination: `${folder}/${stem}-${year}.md` })]],
    };
  }
  const key = pick(r, KEYS);
  const [before, after] = two(r, [2, 3, 5, 8, 10, 30, 60, 8080, 9090]);
  const path = `${folder}/settings.ini`;
  const text = (v: number) => `[server]\nname = ${stem}\n${key} = ${v}\n`;
  return {
    id, family, prompt: `In ${path}, change ${key} from ${before} to ${after}.`,
    initial: { ...bystander, [`${folder}/`]: null, [path]: text(before) },
    expected: { ...bystander, [`${folder}/`]: null, [path]: text(after) },
    gold: [[call('edit_file', { path, edits: [{ oldText: `${key} = ${before}`, newText: `${key} = ${after}` }] })]],
  };
}

const SPLITS: Record<string, { seed: number; size: number }> = { train: { seed: 111, size: 200 }, val: { seed: 222, size: 32 }, test: { seed: 333, size: 32 } };

/** The split's tasks, made by a seeded generator (the same tasks on every machine). */
export function filesTasks(split: string): FilesTask[] {
  const s = SPLITS[split];
  if (!s) throw new Error(`no split ${JSON.stringify(split)} (the splits are ${Object.keys(SPLITS).join(', ')})`);
  const r = rng(s.seed);
  return Array.from({ length: s.size }, (_, i) => makeTask(split, i, r));
}

// ---- the folder and the reward -----------------------------------------------------------------------------------

function writeTree(root: string, tree: Tree): void {
  for (const [path, content] of Object.entries(tree)) {
    if (content === null) mkdirSync(join(root, path), { recursive: true });
    else {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), content);
    }
  }
}

/** The folder as a Tree (directories end in `/`). */
export function readTree(root: string, prefix = ''): Tree {
  const out: Tree = {};
  for (const entry of readdirSync(join(root, prefix), { withFileTypes: true })) {
    const path = `${prefix}${entry.name}`;
    if (entry.isDirectory()) {
      out[`${path}/`] = null;
      Object.assign(out, readTree(root, `${path}/`));
    } else out[path] = readFileSync(join(root, path), 'utf8');
  }
  return out;
}

/**
 * The F1 of the changes the episode made to the folder (entries added and removed; an entry is a directory, or a
 * file with its content, so an edit removes one entry and adds another) against the changes the task asks for: 0
 * for an agent that changes nothing, 1 exactly when the folder ends as expected.
 */
export function treeScore(final: Tree, expected: Tree, initial: Tree): { reward: number; info: { missing: string[]; extra: string[] } } {
  const entries = (t: Tree) => new Set(Object.entries(t).map(([p, c]) => (c === null ? p : `${p} = ${JSON.stringify(c)}`)));
  const changes = (before: Set<string>, after: Set<string>) => new Set([...[...after].filter((e) => !before.has(e)).map((e) => `+ ${e}`), ...[...before].filter((e) => !after.has(e)).map((e) => `- ${e}`)]);
  const start = entries(initial);
  const got = changes(start, entries(final));
  const want = changes(start, entries(expected));
  const missing = [...want].filter((e) => !got.has(e));
  const extra = [...got].filter((e) => !want.has(e));
  const hit = want.size - missing.length;
  return { reward: want.size + got.size === 0 ? 1 : (2 * hit) / (want.size + got.size), info: { missing, extra } };
}

// ---- the env -----------------------------------------------------------------------------------------------------

const require = createRequire(import.meta.url);
const SERVER = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');

interface Folder { dir: string }

export const files = mcpServer(
  { name: 'files', command: process.execPath, args: ({ state }) => [SERVER, (state as Folder).dir] },
  // Six of the server's fourteen tools: enough for the tasks, and a shorter prompt.
  { include: ['list_directory', 'read_text_file', 'create_directory', 'write_file', 'move_file', 'edit_file'], timeoutMs: 10_000 },
);

export default defineEnv<Folder, FilesTask>({
  id: 'examples/mcp-filesystem-v0',
  instructions: [
    'You manage files in a folder with the file tools. Paths are relative to the folder (e.g. notes/todo.txt).',
    'Do exactly what the request asks and leave every other file as it is. A new file ends with a newline.',
    'When it is done, say so in one sentence.',
  ].join('\n'),
  sources: [files],
  state: (task) => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-mcp-files-'));
    writeTree(dir, task.initial);
    return { dir };
  },
  disposeState: ({ dir }) => rmSync(dir, { recursive: true, force: true }),
  tasks: filesTasks,
  family: (task) => task.family,
  maxTurns: 6,
  reward: (ep) => treeScore(readTree(ep.state.dir), ep.task.expected, ep.task.initial),
  demonstrator: (task): DemoTurn[] => [...task.gold.map((calls) => ({ toolCalls: calls })), { content: 'Done.' }],
});

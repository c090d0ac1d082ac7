/**
 * mcpServer against the real MCP servers from npm — @modelcontextprotocol/server-memory and
 * @modelcontextprotocol/server-filesystem, started with this Node (no npx, offline) — and the two examples built on
 * them (examples/mcp-memory, examples/mcp-filesystem) played through DefinedToolEnv with their demonstrators.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import memoryEnv, { graphScore, memory as memorySource, memoryTasks, type Graph, type MemoryTask } from '../../../examples/mcp-memory/env.ts';
import filesEnv, { files as filesSource, filesTasks, readTree, treeScore, type FilesTask } from '../../../examples/mcp-filesystem/env.ts';
import type { EnvDefinition } from '../../../src/tooluse/api/define.ts';
import { EpisodeError } from '../../../src/tooluse/api/errors.ts';
import { mcpServer } from '../../../src/tooluse/api/mcp.ts';
import type { Task, ToolContext, ToolSourceContext } from '../../../src/tooluse/api/types.ts';
import type { ToolUseAction } from '../../../src/tooluse/spaces.ts';

const require = createRequire(import.meta.url);
const MEMORY = require.resolve('@modelcontextprotocol/server-memory/dist/index.js');
const FILESYSTEM = require.resolve('@modelcontextprotocol/server-filesystem/dist/index.js');

let n = 0;
const openCtx = (state: unknown): ToolSourceContext => ({ signal: new AbortController().signal, seed: ++n, episodeId: `ep${n}`, task: { id: `t${n}` }, state });
const callCtx = (): ToolContext => ({ signal: new AbortController().signal, seed: 0, episodeId: 'ep', task: { id: 't' }, state: {} });

describe('server-memory', () => {
  test('each episode has its own memory file; the graph is read back through the client (handle)', async () => {
    const dirs = [mkdtempSync(join(tmpdir(), 'mcp-mem-')), mkdtempSync(join(tmpdir(), 'mcp-mem-'))];
    const source = mcpServer({ name: 'memory', command: process.execPath, args: [MEMORY], env: ({ state }) => ({ MEMORY_FILE_PATH: join((state as { dir: string }).dir, 'memory.jsonl') }) });
    try {
      const graphs: Graph[] = [];
      for (const [i, dir] of dirs.entries()) {
        const open = await source.open(openCtx({ dir }));
        try {
          const names = open.tools.map((t) => t.name);
          for (const name of ['create_entities', 'create_relations', 'add_observations', 'read_graph', 'search_nodes']) assert.ok(names.includes(name), name);
          const run = (name: string, args: Record<string, unknown>) => open.tools.find((t) => t.name === name)!.run(args, callCtx());
          const who = i === 0 ? 'Alice' : 'Bob';
          await run('create_entities', { entities: [{ name: who, entityType: 'person', observations: ['likes tea'] }, { name: 'Acme', entityType: 'organization', observations: [] }] });
          const out = String(await run('create_relations', { relations: [{ from: who, to: 'Acme', relationType: 'works_at' }] }));
          assert.match(out, /works_at/);
          // a refused call (schema check of the server) is a tool error, not an env error
          await assert.rejects(run('create_relations', { relations: 'nope' }) as Promise<unknown>, (e: Error) => !(e instanceof EpisodeError));
          const read = await open.handle.callTool({ name: 'read_graph', arguments: {} });
          graphs.push(read.structuredContent as unknown as Graph);
          assert.match(readFileSync(join(dir, 'memory.jsonl'), 'utf8'), new RegExp(`"name":"${who}"`));
        } finally {
          await open.close();
        }
        assert.equal(open.pid !== undefined && (() => { try { process.kill(open.pid, 0); return true; } catch { return false; } })(), false);
      }
      assert.deepEqual(graphs.map((g) => g.entities.map((e) => e.name)), [['Alice', 'Acme'], ['Bob', 'Acme']], 'the second episode does not see the first one\'s graph');
      assert.deepEqual(graphs[1].relations, [{ from: 'Bob', to: 'Acme', relationType: 'works_at' }]);
    } finally {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  });
});

describe('server-filesystem', () => {
  test('a fresh folder per episode: write, read, list, move; a path outside the folder is a tool error', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mcp-fs-'));
    const outside = mkdtempSync(join(tmpdir(), 'mcp-fs-outside-'));
    writeFileSync(join(outside, 'secret.txt'), 'no');
    try {
      const source = mcpServer({ name: 'files', command: process.execPath, args: ({ state }) => [FILESYSTEM, (state as { dir: string }).dir] });
      const open = await source.open(openCtx({ dir }));
      try {
        const run = (name: string, args: Record<string, unknown>) => open.tools.find((t) => t.name === name)!.run(args, callCtx()) as Promise<unknown>;
        assert.equal(open.tools.find((t) => t.name === 'read_text_file')?.kind, 'read');
        assert.equal(open.tools.find((t) => t.name === 'write_file')?.kind, 'write');
        await run('create_directory', { path: 'notes' });
        await run('write_file', { path: 'notes/a.txt', content: 'first line\n' });
        assert.equal(await run('read_text_file', { path: 'notes/a.txt' }), 'first line\n');
        await run('move_file', { source: 'notes/a.txt', destination: 'b.txt' });
        assert.match(String(await run('list_directory', { path: '.' })), /\[FILE\] b\.txt/);
        assert.deepEqual(readTree(dir), { 'b.txt': 'first line\n', 'notes/': null });
        await assert.rejects(run('read_text_file', { path: join(outside, 'secret.txt') }), (e: Error) => !(e instanceof EpisodeError) && /Access denied/.test(e.message));
        await assert.rejects(run('read_text_file', { path: 'missing.txt' }), (e: Error) => !(e instanceof EpisodeError) && /ENOENT|no such file/i.test(e.message));
      } finally {
        await open.close();
      }
      assert.equal(source.openCount, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(outside, { recursive: true, force: true });
    }
  });
});

/** Plays `turns` on a fresh episode of the task; returns the reward, its info and the state the episode had. */
async function play<T extends Task>(def: EnvDefinition<{ dir: string }, T>, split: string, task: T, turns: ToolUseAction[]): Promise<{ reward: number; info: Record<string, unknown>; dir: string; tools: string[] }> {
  const env = def.makeEnv({ split });
  try {
    const [, info] = await env.reset({ seed: 7, options: { taskId: task.id } });
    const dir = env.state!.dir;
    assert.ok(existsSync(dir));
    const tools = (info.tools as { function: { name: string } }[]).map((t) => t.function.name);
    for (const turn of turns) {
      const [, reward, terminated, truncated, stepInfo] = await env.step(turn);
      if (terminated || truncated) return { reward, info: (stepInfo.rewardInfo as { info: Record<string, unknown> }).info, dir, tools };
    }
    throw new Error(`the episode of ${task.id} did not end`);
  } finally {
    await env.close();
  }
}

/** The first task of each family in the split. */
function onePerFamily<T extends Task & { family: string }>(tasks: T[]): T[] {
  const seen = new Set<string>();
  return tasks.filter((t) => !seen.has(t.family) && seen.add(t.family));
}

describe('examples/mcp-memory', () => {
  test('tasks are seeded (the same on every call), ids unique, splits train/val/test', () => {
    assert.deepEqual(memoryTasks('train'), memoryTasks('train'));
    assert.equal(new Set(memoryTasks('train').map((t) => t.id)).size, 200);
    assert.equal(memoryTasks('val').length, 32);
    assert.notDeepEqual(memoryTasks('val').map((t) => t.prompt), memoryTasks('test').map((t) => t.prompt));
    assert.throws(() => memoryTasks('dev'), /no split "dev"/);
  });

  test('graphScore is the F1 of the changes: 0 for no change, 1 only for the expected graph', () => {
    const initial: Graph = { entities: [{ name: 'A', entityType: 'person', observations: [] }, { name: 'O', entityType: 'organization', observations: [] }], relations: [{ from: 'A', to: 'O', relationType: 'works_at' }] };
    const expected: Graph = { entities: [{ name: 'A', entityType: 'person', observations: ['x'] }, initial.entities[1]], relations: [{ from: 'A', to: 'B', relationType: 'knows' }] };
    assert.equal(graphScore(expected, expected, initial).reward, 1);
    assert.equal(graphScore(initial, expected, initial).reward, 0, 'the starting graph scores 0 though it shares facts with the expected one');
    const partial = graphScore({ ...expected, relations: [...initial.relations, ...expected.relations] }, expected, initial);
    assert.equal(partial.reward, (2 * 2) / (3 + 2));
    assert.deepEqual(partial.info.missing, ['- relation A -works_at-> O']);
    assert.deepEqual(graphScore(initial, initial, initial), { reward: 1, info: { missing: [], extra: [] } });
  });

  test('the demonstrator scores 1 on every family; a wrong graph scores less; no server or folder is left', async () => {
    const tasks = onePerFamily(memoryTasks('val'));
    assert.deepEqual(tasks.map((t) => t.family).sort(), ['lives_in', 'moved', 'works_at', 'works_at_knows']);
    for (const task of tasks) {
      const r = await play(memoryEnv, 'val', task, memoryEnv.spec.demonstrator!(task) as ToolUseAction[]);
      assert.equal(r.reward, 1, `${task.id} (${task.family}): ${JSON.stringify(r.info)}`);
      assert.deepEqual(r.tools, ['read_graph', 'create_entities', 'create_relations', 'delete_relations']);
      assert.equal(existsSync(r.dir), false, 'disposeState removed the episode folder');
    }
    const moved = tasks.find((t) => t.family === 'moved') as MemoryTask;
    // Adding the new employer without deleting the old relation misses one of the three changes.
    const wrong = await play(memoryEnv, 'val', moved, [...moved.gold.slice(1).map((calls) => ({ toolCalls: calls })), { content: 'Updated.' }]);
    assert.equal(wrong.reward, (2 * 2) / (3 + 2));
    assert.deepEqual(wrong.info.extra, []);
    const old = (moved.gold[0][0].arguments.relations as { from: string; to: string }[])[0];
    assert.deepEqual(wrong.info.missing, [`- relation ${old.from} -works_at-> ${old.to}`]);
    assert.equal(memorySource.openCount, 0);
  });
});

describe('examples/mcp-filesystem', () => {
  test('tasks are seeded, ids unique; treeScore is 0 for no change, 1 only for the expected folder', () => {
    assert.deepEqual(filesTasks('train'), filesTasks('train'));
    assert.equal(new Set(filesTasks('train').map((t) => t.id)).size, 200);
    assert.throws(() => filesTasks('dev'), /no split "dev"/);
    const initial = { 'a/': null, 'a/x': '1\n', 'b.txt': 'keep\n' };
    const expected = { 'a/': null, 'a/x': '2\n', 'b.txt': 'keep\n' };
    assert.equal(treeScore(expected, expected, initial).reward, 1);
    assert.equal(treeScore(initial, expected, initial).reward, 0);
    const wrongEdit = treeScore({ 'a/': null, 'a/x': '3\n', 'b.txt': 'keep\n' }, expected, initial);
    assert.equal(wrongEdit.reward, 0.5, 'the old content is removed (a hit), the new one is wrong');
    assert.deepEqual(wrongEdit.info, { missing: ['+ a/x = "2\\n"'], extra: ['+ a/x = "3\\n"'] });
  });

  test('the demonstrator scores 1 on every family; a wrong edit scores less; no server or folder is left', async () => {
    const tasks = onePerFamily(filesTasks('val'));
    assert.deepEqual(tasks.map((t) => t.family).sort(), ['create', 'edit', 'move', 'rename']);
    for (const task of tasks) {
      const r = await play(filesEnv, 'val', task, filesEnv.spec.demonstrator!(task) as ToolUseAction[]);
      assert.equal(r.reward, 1, `${task.id} (${task.family}): ${JSON.stringify(r.info)}`);
      assert.equal(existsSync(r.dir), false);
    }
    const create = tasks.find((t) => t.family === 'create') as FilesTask;
    const path = String(create.gold[1][0].arguments.path);
    const wrong = await play(filesEnv, 'val', create, [
      { toolCalls: [{ name: 'write_file', arguments: { path: 'elsewhere.txt', content: 'x\n' } }] },
      { toolCalls: [{ name: 'read_text_file', arguments: { path } }] }, // a tool error the agent sees: the file is not there
      { content: 'Done.' },
    ]);
    assert.ok(wrong.reward < 1);
    assert.equal(wrong.reward, 0);
    assert.ok((wrong.info.missing as string[]).some((m) => m.startsWith(`+ ${path}`)));
    assert.equal(filesSource.openCount, 0);
  });
});

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { make } from '../../../src/gym/registry/registry.ts';
import { defineEnv, definedEnvIds, demonstrationEpisodes, getEnvDefinition, loadEnvModule, readTasksFile, registerEnv, unregisterEnv, writeTrajectoriesJsonl } from '../../../src/index.ts';
import { readTrajectoriesJsonl, toChatConversation } from '../../../src/rl/sft-data.ts';
import { notesSpec } from './notes-env.ts';

const API = pathToFileURL(resolve('src/index.ts')).href;
/** The temp folder has no node_modules: the module imports zod by URL. */
const ZOD = import.meta.resolve('zod');

describe('loadEnvModule', () => {
  let dir = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-envmod-'));
    writeFileSync(join(dir, 'echo.ts'), [
      `import { defineEnv, tool } from ${JSON.stringify(API)};`,
      `import { z } from ${JSON.stringify(ZOD)};`,
      `const echo = tool({ name: 'echo', description: 'Echoes.', parameters: z.object({ text: z.string() }), run: async ({ text }: { text: string }) => text });`,
      `export default defineEnv({ id: 'test/echo-v0', instructions: 'Echo.', tools: [echo], tasks: [{ id: 't', prompt: 'say hi' }],`,
      `  reward: (ep) => (ep.toolCalls.some((c) => c.result === 'hi') ? 1 : 0) });`,
      `export const helper = 1;`,
    ].join('\n'));
    writeFileSync(join(dir, 'factory.ts'), [
      `import { defineEnv } from ${JSON.stringify(API)};`,
      `export function makeEnv(o: { n?: number }) { return defineEnv({ id: 'test/factory-v' + (o.n ?? 0), instructions: 'x', tasks: [{ id: 't', prompt: 'p' }], reward: () => 1 }); }`,
    ].join('\n'));
    // A plain .mjs module exporting a spec object (no import of longrun at all).
    writeFileSync(join(dir, 'plain.mjs'), `export const myEnv = { id: 'test/plain-v0', instructions: 'x', tasks: [{ id: 't', prompt: 'p' }], reward: () => 0.5 };\nexport const other = 3;\n`);
    writeFileSync(join(dir, 'none.mjs'), `export const a = 1;\nexport function b() { return 2; }\n`);
    writeFileSync(join(dir, 'two.mjs'), `const s = (id) => ({ id, instructions: 'x', tasks: [{ id: 't', prompt: 'p' }], reward: () => 1 });\nexport const one = s('test/one-v0');\nexport const two = s('test/two-v0');\n`);
    writeFileSync(join(dir, 'broken.ts'), `export default defineEnv(;\n`);
  });
  after(() => {
    for (const id of definedEnvIds().filter((i) => i.startsWith('test/'))) unregisterEnv(id);
    rmSync(dir, { recursive: true, force: true });
  });

  it('imports a .ts module, registers its default export, and the gym registry makes it', async () => {
    const def = await loadEnvModule(join(dir, 'echo.ts'));
    assert.equal(def.id, 'test/echo-v0');
    assert.equal(getEnvDefinition('test/echo-v0'), def);
    const env = make<unknown, unknown>('test/echo-v0', { split: 'train' });
    const [obs] = await env.reset({ seed: 0 });
    assert.deepEqual((obs as { messages: { content: string }[] }).messages.map((m) => m.content), ['say hi']);
    await env.step({ content: null, toolCalls: [{ name: 'echo', arguments: { text: 'hi' } }] });
    const [, r, terminated] = await env.step({ content: 'done' });
    assert.deepEqual([r, terminated], [1, true]);
    // Loading again replaces the registration (a reloaded module).
    assert.equal((await loadEnvModule(join(dir, 'echo.ts'))).id, 'test/echo-v0');
  });

  it('takes a named export, calls a function export with the options, and defines a plain spec object', async () => {
    assert.equal((await loadEnvModule(join(dir, 'factory.ts'), 'makeEnv', { n: 3 })).id, 'test/factory-v3');
    const plain = await loadEnvModule(join(dir, 'plain.mjs'));
    assert.equal(plain.id, 'test/plain-v0');
    assert.equal((await loadEnvModule(join(dir, 'two.mjs'), 'two')).id, 'test/two-v0');
  });

  it('a module that exports no env, or a wrong export, is an error naming the file and its exports', async () => {
    const none = join(dir, 'none.mjs');
    await assert.rejects(loadEnvModule(none), (e: Error) => e.message.includes(none) && /exports no env.*its exports: a, b/.test(e.message));
    await assert.rejects(loadEnvModule(none, 'missing'), /has no export missing; its exports: a, b/);
    await assert.rejects(loadEnvModule(none, 'a'), /export a is not an env \(defineEnv\(...\)\) but number/);
    await assert.rejects(loadEnvModule(join(dir, 'two.mjs')), /exports several envs \(one, two\); name one with export:/);
    await assert.rejects(loadEnvModule(join(dir, 'plain.mjs'), 'myEnv', { n: 1 }), /options were given but export myEnv is not a function/);
    await assert.rejects(loadEnvModule(join(dir, 'broken.ts')), /broken\.ts did not load/);
    await assert.rejects(loadEnvModule(join(dir, 'missing.ts')), /missing\.ts does not exist/);
    await assert.rejects(loadEnvModule(join(dir, 'tasks.json')), /expected a \.ts, \.mts, \.js or \.mjs file/);
  });

  it('registerEnv refuses a built-in id; getEnvDefinition lists the defined ids', async () => {
    const { registerBuiltinEnvs } = await import('../../../src/envs.ts');
    registerBuiltinEnvs();
    assert.throws(() => registerEnv(defineEnv({ ...notesSpec(), id: 'GuessNumber-v0' })), /the id GuessNumber-v0 is taken by a built-in env/);
    assert.throws(() => getEnvDefinition('GuessNumber-v0'), /GuessNumber-v0 is a built-in gym env/);
    assert.throws(() => getEnvDefinition('nope-v0'), /no env defined with id nope-v0; defined envs: .*test\/echo-v0/);
  });
});

describe('readTasksFile', () => {
  let dir = '';
  before(() => (dir = mkdtempSync(join(tmpdir(), 'longrun-tasks-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };

  it('reads a JSON array or JSON Lines', () => {
    assert.deepEqual(readTasksFile(file('a.json', '[\n  {"id": "x", "n": 1},\n  {"id": "y"}\n]\n')).map((t) => t.id), ['x', 'y']);
    assert.deepEqual(readTasksFile(file('a.jsonl', '{"id": "x"}\n\n{"id": "y", "prompt": "p"}\n')), [{ id: 'x' }, { id: 'y', prompt: 'p' }]);
  });

  it('names the file and line of what does not parse', () => {
    const bad = file('bad.jsonl', '{"id": "x"}\n{"id": "y",}\n');
    assert.throws(() => readTasksFile(bad), (e: Error) => e.message.startsWith(`tasks file ${bad}:2: not valid JSON`));
    const badArray = file('bad.json', '[\n  {"id": "x"},\n  {"id": "y" "z": 1}\n]');
    assert.throws(() => readTasksFile(badArray), (e: Error) => e.message.startsWith(`tasks file ${badArray}:3: not valid JSON`));
    assert.throws(() => readTasksFile(file('noid.json', '[\n {"id": "x"},\n\n {"name": "y"}\n]')), /noid\.json:4 \(task 1\): the task has no string id/);
    assert.throws(() => readTasksFile(file('dup.jsonl', '{"id": "x"}\n{"id": "x"}\n')), /dup\.jsonl:2: the id x is already used at line 1/);
    assert.throws(() => readTasksFile(file('num.jsonl', '3\n')), /num\.jsonl:1: a task must be a JSON object/);
    assert.throws(() => readTasksFile(file('empty.jsonl', '\n')), /empty\.jsonl: no tasks/);
    assert.throws(() => readTasksFile(join(dir, 'gone.json')), /cannot read tasks file .*gone\.json/);
  });
});

describe('demonstrationEpisodes', () => {
  it('plays the demonstrator and writes records that the SFT reader takes, rendered with the env\'s prompt and tools', async () => {
    const def = defineEnv(notesSpec({ greeting: 'Hi!', user: { respond: (ctx) => (ctx.turn === 0 ? 'Save it please.' : null) } }));
    const records = await demonstrationEpisodes(def, 'train', 2, { seed: 5 });
    assert.equal(records.length, 4);
    assert.deepEqual(records.map((r) => [r.taskId, r.trial, r.seed, r.reward, r.family]), [['a', 0, 5, 1, 'first'], ['a', 1, 6, 1, 'first'], ['b', 0, 7, 1, 'second'], ['b', 1, 8, 1, 'second']]);
    assert.deepEqual(records[0]!.messages.map((m) => m.role), ['assistant', 'user', 'assistant', 'tool', 'assistant']);
    const dir = mkdtempSync(join(tmpdir(), 'longrun-demo-'));
    try {
      const path = join(dir, 'demo.jsonl');
      writeTrajectoriesJsonl(path, records);
      const read = readTrajectoriesJsonl(path);
      assert.equal(read.length, 4);
      const conv = toChatConversation(read[0]!);
      assert.equal(conv.messages[0]!.content, notesSpec().instructions);
      assert.deepEqual(conv.tools!.map((t) => t.function.name), ['add_note', 'get_note', 'slow', 'boom', 'done']);
      assert.deepEqual(conv.messages.slice(1).map((m) => m.role), ['assistant', 'user', 'assistant', 'tool', 'assistant']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const short = defineEnv(notesSpec({ demonstrator: () => [{ content: null, toolCalls: [{ name: 'get_note', arguments: { key: 'a' } }] }] }));
    await assert.rejects(demonstrationEpisodes(short), /the demonstrator's 1 turns ran out before the episode of task a ended/);
    assert.equal((await demonstrationEpisodes(def, 'train', 1, { minReward: 2 })).length, 0);
  });
});

import { describe, it, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { defineEnv, EpisodeError, scriptedUser, type OpenToolSource, type ToolSource } from '../../../src/tooluse/api/index.ts';
import type { ToolMessage } from '../../../src/tooluse/messages.ts';
import { log, notesEnv, notesSpec, TASKS, type Notes } from './notes-env.ts';

const call = (name: string, args: unknown) => ({ content: null, toolCalls: [{ name, arguments: args }] });

beforeEach(() => {
  log.made = 0;
  log.disposed = 0;
  log.slowAborted = false;
});

describe('a defined env, single-agent', () => {
  it('opens with task.prompt, shows its tools with their JSON Schemas, runs async tools, and a final text ends and scores the episode', async () => {
    const env = notesEnv().makeEnv();
    const [obs, info] = await env.reset({ seed: 1, options: { taskId: 'a' } });
    assert.deepEqual(obs.messages, [{ role: 'user', content: TASKS[0]!.prompt, toolCalls: null }]);
    assert.equal(info.systemPrompt, 'You keep notes. Use the tools, then say what you did.');
    const tools = info.tools as { function: { name: string; parameters: Record<string, unknown> } }[];
    assert.deepEqual(tools.map((t) => t.function.name), ['add_note', 'get_note', 'slow', 'boom'], 'no done tool without a user');
    assert.deepEqual(tools[0]!.function.parameters, { type: 'object', properties: { key: { type: 'string', description: 'the key' }, text: { type: 'string' } }, required: ['key', 'text'] });
    assert.equal(tools[1]!.function.parameters.additionalProperties, false);
    assert.equal(info.rewardInfo, null);

    const [o1, r1, term1, trunc1] = await env.step(call('add_note', { key: 'a', text: 'hello' }));
    assert.equal(r1, 0);
    assert.equal(term1 || trunc1, false);
    assert.equal((o1.messages[0] as ToolMessage).content, '{"ok":true}');
    // Arguments may come as a JSON string (OpenAI's wire format).
    const [o2] = await env.step(call('get_note', '{"key": "a"}'));
    assert.deepEqual([(o2.messages[0] as ToolMessage).content, (o2.messages[0] as ToolMessage).error], ['hello', false]);
    const [o3, r3, term3, trunc3, info3] = await env.step({ content: 'Saved a.' });
    assert.deepEqual(o3.messages, []);
    assert.deepEqual([r3, term3, trunc3], [1, true, false]);
    assert.equal(info3.terminationReason, 'agent_stop');
    const ri = info3.rewardInfo as { reward: number; info: Record<string, unknown> };
    assert.equal(ri.reward, 1);
    assert.equal(ri.info.match, true);
    assert.equal(ri.info.terminationReason, 'agent_stop');
    assert.equal(log.made, 2, 'the episode state and a fresh one for the gold replay');
    assert.equal(log.disposed, 2, 'both disposed');
    await assert.rejects(env.step({ content: 'again' }), /episode ended \(agent_stop\)/);
  });

  it('scores a wrong final state 0 (the gold hash is cached per task and seed)', async () => {
    const env = notesEnv().makeEnv();
    await env.reset({ seed: 2, options: { taskId: 'b' } });
    await env.step(call('add_note', { key: 'b', text: 'WORLD' }));
    const [, r, , , info] = await env.step({ content: 'done' });
    assert.equal(r, 0);
    assert.equal((info.rewardInfo as { info: { match: boolean } }).info.match, false);
  });

  it('turns every tool failure into tool-result text the agent sees, and the episode goes on', async () => {
    const env = notesEnv().makeEnv();
    await env.reset({ seed: 3, options: { taskId: 'a' } });
    const result = async (name: string, args: unknown) => {
      const [obs, , terminated] = await env.step(call(name, args));
      assert.equal(terminated, false);
      const m = obs.messages[0] as ToolMessage;
      assert.equal(m.error, true, `${name} is an error`);
      return m.content;
    };
    assert.match(await result('add_note', { key: 5, text: 'x' }), /^Error: invalid arguments for add_note: key: .*string/);
    assert.match(await result('add_note', { key: 'k' }), /^Error: invalid arguments for add_note: text:/);
    assert.match(await result('get_note', {}), /^Error: invalid arguments for get_note: \(arguments\): must have required property 'key'/);
    assert.match(await result('get_note', { key: 'a', extra: 1 }), /^Error: invalid arguments for get_note: .*additional properties \(extra\)/);
    assert.equal(await result('get_note', { key: 'zz' }), 'Error: no note zz');
    assert.equal(await result('boom', {}), 'Error: kaput');
    assert.match(await result('nope', {}), /^Error: unknown tool 'nope'; the tools are: add_note, get_note, slow, boom/);
    assert.match(await result('get_note', '[1, 2]'), /^Error: the arguments of get_note must be a JSON object/);
    const t0 = Date.now();
    assert.equal(await result('slow', {}), 'Error: tool slow timed out after 40 ms');
    assert.ok(Date.now() - t0 < 2000);
    assert.equal(log.slowAborted, true, "the hung call's signal aborted");
    const [, r, terminated] = await env.step({ content: 'giving up' });
    assert.deepEqual([r, terminated], [0, true]);
  });

  it('ends at maxTurns as truncated, still scored', async () => {
    const env = defineEnv(notesSpec({ maxTurns: 2 })).makeEnv();
    await env.reset({ seed: 4, options: { taskId: 'a' } });
    await env.step(call('add_note', { key: 'a', text: 'hello' }));
    const [, r, terminated, truncated, info] = await env.step(call('get_note', { key: 'a' }));
    assert.deepEqual([r, terminated, truncated, info.terminationReason], [1, false, true, 'max_turns']);
  });

  it('a task without a prompt is an EpisodeError naming the env and task', async () => {
    const env = defineEnv({ ...notesSpec(), tasks: [{ id: 'np', key: 'k', text: 't' } as never] }).makeEnv();
    await assert.rejects(env.reset({ seed: 0 }), (e: unknown) => e instanceof EpisodeError && /env test\/notes-v0: .*task np has no prompt/.test(e.message));
    assert.equal(log.disposed, log.made, 'the state made was disposed');
  });
});

describe('a defined env with a user', () => {
  const spec = () => notesSpec({
    greeting: 'Hello, what shall I note?',
    user: scriptedUser<Notes>((ctx) => {
      if (ctx.turn === 0) return 'Please save a = hello.';
      if (ctx.lastAgentMessage?.includes('?')) return 'Yes, exactly that.';
      return null;
    }),
  });

  it('the user opens after the greeting, answers agent text, and leaves with null (user_stop); a done tool is shown', async () => {
    const env = defineEnv(spec()).makeEnv();
    const [obs, info] = await env.reset({ seed: 5, options: { taskId: 'a' } });
    assert.deepEqual(obs.messages.map((m) => m.content), ['Please save a = hello.'], 'the greeting is not in the observation');
    assert.equal(env.messages[0]!.content, 'Hello, what shall I note?');
    assert.equal((info.tools as { function: { name: string } }[]).at(-1)!.function.name, 'done');
    const [o1, , t1] = await env.step({ content: 'Save a = hello?' });
    assert.deepEqual([o1.messages[0]!.role, o1.messages[0]!.content, t1], ['user', 'Yes, exactly that.', false]);
    await env.step(call('add_note', { key: 'a', text: 'hello' }));
    const [, r, t2, , info2] = await env.step({ content: 'Saved.' });
    assert.deepEqual([r, t2, info2.terminationReason], [1, true, 'user_stop']);
  });

  it('the done tool ends the episode after the turn\'s other calls (agent_stop)', async () => {
    const env = defineEnv(spec()).makeEnv();
    await env.reset({ seed: 6, options: { taskId: 'a' } });
    const [obs, r, terminated, , info] = await env.step({ content: null, toolCalls: [{ name: 'add_note', arguments: { key: 'a', text: 'hello' } }, { name: 'done', arguments: {} }] });
    assert.equal(obs.messages.length, 1);
    assert.deepEqual([r, terminated, info.terminationReason], [1, true, 'agent_stop']);
  });

  it('a user that throws or returns a non-string is an EpisodeError naming the env; the state is disposed', async () => {
    const bad = defineEnv(notesSpec({ user: { name: 'flaky', respond: (ctx) => { if (ctx.turn > 0) throw new Error('connection reset'); return 'hi'; } } })).makeEnv();
    await bad.reset({ seed: 7, options: { taskId: 'a' } });
    await assert.rejects(bad.step({ content: 'hello?' }), (e: unknown) => e instanceof EpisodeError && e.message.includes('env test/notes-v0') && e.message.includes('the user (flaky) threw') && e.message.includes('connection reset'));
    assert.equal(log.disposed, log.made);
    const odd = defineEnv(notesSpec({ user: { respond: () => 42 as unknown as string } })).makeEnv();
    await assert.rejects(odd.reset({ seed: 8 }), /env test\/notes-v0: the user returned 42/);
  });
});

describe('a defined env: the reward', () => {
  for (const [what, reward, pattern] of [
    ['throws', () => { throw new Error('db gone'); }, /env test\/notes-v0: the reward function threw on task a: db gone/],
    ['returns NaN', () => NaN, /env test\/notes-v0: the reward function returned NaN on task a; a reward must be a finite number/],
    ['returns { reward: Infinity }', () => ({ reward: Infinity }), /returned \{"reward":null\}|returned .*Infinity/],
    ['returns a string', () => 'high' as unknown as number, /returned high/],
  ] as const) {
    it(`that ${what} is an EpisodeError naming the env; sources closed and the state disposed`, async () => {
      const closed: string[] = [];
      const source: ToolSource = { name: 'src', open: async () => ({ tools: [], close: async () => { closed.push('src'); } }) };
      const env = defineEnv(notesSpec({ reward: reward as never, sources: [source] })).makeEnv();
      await env.reset({ seed: 9, options: { taskId: 'a' } });
      await assert.rejects(env.step({ content: 'done' }), (e: unknown) => {
        assert.ok(e instanceof EpisodeError);
        assert.match(e.message, pattern);
        assert.equal(e.env, 'test/notes-v0');
        return true;
      });
      assert.deepEqual(closed, ['src']);
      assert.equal(log.disposed, 1);
    });
  }
});

describe('a defined env: tool sources', () => {
  function source(name: string, tools: string[], events: string[], fail?: 'open'): ToolSource {
    return {
      name,
      async open(ctx): Promise<OpenToolSource> {
        if (fail === 'open') throw new Error('spawn ENOENT');
        events.push(`open ${name} ${ctx.task.id} ${JSON.stringify((ctx.state as Notes).notes)}`);
        return {
          tools: tools.map((t) => ({ name: t, description: `${t} of ${name}`, parameters: { type: 'object', properties: { x: { type: 'number' } } }, run: async (args: { x?: number }) => `${name}.${t}(${args.x ?? ''})` })),
          close: async () => { events.push(`close ${name}`); },
          handle: { server: name },
        };
      },
    };
  }

  it('adds the sources\' tools, exposes their handles to the reward, and closes them (last opened first)', async () => {
    const events: string[] = [];
    let seen: Record<string, unknown> = {};
    const env = defineEnv(notesSpec({ sources: [source('one', ['echo'], events), source('two', ['ping'], events)], reward: (ep) => { seen = ep.sources; return ep.toolCalls.length; } })).makeEnv();
    const [, info] = await env.reset({ seed: 10, options: { taskId: 'b' } });
    assert.deepEqual((info.tools as { function: { name: string } }[]).map((t) => t.function.name), ['add_note', 'get_note', 'slow', 'boom', 'echo', 'ping']);
    const [obs] = await env.step(call('echo', { x: 3 }));
    assert.equal(obs.messages[0]!.content, 'one.echo(3)');
    const [, r] = await env.step({ content: 'ok' });
    assert.equal(r, 1);
    assert.deepEqual(seen, { one: { server: 'one' }, two: { server: 'two' } });
    assert.deepEqual(events, ['open one b {}', 'open two b {}', 'close two', 'close one']);
  });

  it('a tool name clash is an EpisodeError naming the env, source and tool; what opened is closed', async () => {
    const events: string[] = [];
    const env = defineEnv(notesSpec({ sources: [source('one', ['echo'], events), source('two', ['get_note'], events)] })).makeEnv();
    await assert.rejects(env.reset({ seed: 11 }), /env test\/notes-v0: tool get_note of source two clashes with the tool of the same name of the env/);
    assert.deepEqual(events.filter((e) => e.startsWith('close')), ['close two', 'close one']);
    assert.equal(log.disposed, 1);
    const env2 = defineEnv(notesSpec({ sources: [source('one', ['echo'], events), source('two', ['echo'], [])] })).makeEnv();
    await assert.rejects(env2.reset({ seed: 12 }), /tool echo of source two clashes with the tool of the same name of source one/);
  });

  it('a source that fails to open is an EpisodeError; the sources opened before close', async () => {
    const events: string[] = [];
    const env = defineEnv(notesSpec({ sources: [source('one', ['echo'], events), source('dead', [], events, 'open')] })).makeEnv();
    await assert.rejects(env.reset({ seed: 13 }), (e: unknown) => e instanceof EpisodeError && /env test\/notes-v0: tool source dead did not open for task .*: spawn ENOENT/.test(e.message));
    assert.deepEqual(events.filter((e) => e.startsWith('close')), ['close one']);
    // close() with nothing open is harmless; a later reset works.
    await env.close();
  });

  it('close() mid-episode closes the sources and disposes the state', async () => {
    const events: string[] = [];
    const env = defineEnv(notesSpec({ sources: [source('one', ['echo'], events)] })).makeEnv();
    await env.reset({ seed: 14 });
    await env.close();
    await env.close();
    assert.deepEqual(events.filter((e) => e.startsWith('close')), ['close one']);
    assert.equal(log.disposed, 1);
  });
});

describe('defineEnv and tasks', () => {
  it('refuses malformed specs with errors naming the env and the tool', () => {
    assert.throws(() => defineEnv({ ...notesSpec(), id: 'bad id!' }), /defineEnv: Malformed environment ID: bad id!/);
    assert.throws(() => defineEnv({ ...notesSpec(), reward: undefined as never }), /env test\/notes-v0: reward must be a function/);
    const [t] = notesSpec().tools!;
    assert.throws(() => defineEnv({ ...notesSpec(), tools: [t!, t!] }), /env test\/notes-v0: two tools are named add_note/);
    assert.throws(() => defineEnv({ ...notesSpec(), tools: [{ ...t!, parameters: { _def: {}, safeParse: () => 0 } as never }] }), /tool add_note: parameters look like a zod 3 schema/);
    assert.throws(() => defineEnv({ ...notesSpec(), tools: [{ ...t!, parameters: { type: 'array' } }] }), /tool add_note: parameters must describe an object/);
    assert.throws(() => defineEnv({ ...notesSpec(), tools: [{ ...t!, parameters: { type: 'object', properties: { a: { type: 'nonsense' } } } }] }), /tool add_note: parameters are not a valid JSON Schema/);
    assert.throws(() => defineEnv({ ...notesSpec(), user: scriptedUser(() => null), tools: [{ ...t!, name: 'done' }] }), /the tool name done is taken/);
    assert.throws(() => defineEnv({ ...notesSpec(), maxTurns: 0 }), /maxTurns must be a positive integer/);
  });

  it('loads splits, checks tasks, and names the env and split in errors', async () => {
    const def = notesEnv();
    assert.deepEqual((await def.tasks()).map((t) => t.id), ['a', 'b']);
    assert.deepEqual((await def.tasks('val')).map((t) => t.id), ['v']);
    assert.deepEqual(def.splits(), ['train', 'val']);
    await assert.rejects(def.tasks('test'), /env test\/notes-v0, split 'test': no such split; the splits are train, val/);
    const arr = defineEnv({ ...notesSpec(), tasks: TASKS });
    await assert.rejects(arr.tasks('val'), /tasks is a list, which is split 'train'/);
    const dup = defineEnv({ ...notesSpec(), tasks: () => [TASKS[0]!, TASKS[0]!] });
    await assert.rejects(dup.tasks(), /tasks 0 and 1 share the id a/);
    const thrower = defineEnv({ ...notesSpec(), tasks: async () => { throw new Error('no file'); } });
    await assert.rejects(thrower.tasks(), (e: unknown) => e instanceof EpisodeError && /the tasks function threw: no file/.test(e.message));
    const noId = defineEnv({ ...notesSpec(), tasks: [{ prompt: 'x' } as never] });
    await assert.rejects(noId.tasks(), /task 0 has no string id/);
  });
});

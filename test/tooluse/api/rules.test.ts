/**
 * The env API's optional rules (maxSteps, maxErrors, doneTool, prepareTurn, checkTurn, callTool, malformedArguments,
 * user replies that end the episode, a reward breakdown, an interactive demonstrator), on the notes env: each changes
 * what it says and nothing else. The τ² retail env uses them all (test/domains/retail/define-parity.test.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defineEnv, demonstrationEpisodes, EpisodeError, scriptedUser, toolSpec, type ToolDef } from '../../../src/tooluse/api/index.ts';
import type { ToolMessage } from '../../../src/tooluse/messages.ts';
import { notesSpec, type Notes, type NoteTask } from './notes-env.ts';

const call = (name: string, args: unknown, id?: string) => ({ content: null, toolCalls: [{ name, arguments: args, ...(id ? { id } : {}) }] });
const chatty = scriptedUser<Notes, NoteTask>((ctx) => (ctx.turn === 0 ? 'Please save a = hello.' : 'Go on.'));

describe('env API optional rules', () => {
  it('maxSteps counts agent messages, tool batches and user messages (τ² steps), ends max_steps truncated, and reports stepCount', async () => {
    const env = defineEnv(notesSpec({ user: chatty, maxSteps: 5 })).makeEnv();
    const [, info0] = await env.reset({ seed: 1, options: { taskId: 'a' } });
    assert.equal(info0.stepCount, 1, 'the first user message');
    const [, , t1, tr1, i1] = await env.step(call('add_note', { key: 'a', text: 'hello' }));
    assert.deepEqual([t1, tr1, i1.stepCount], [false, false, 3]);
    // A text turn is step 4 and the user's reply step 5: the limit, after the reply.
    const [obs, r, t2, tr2, i2] = await env.step({ content: 'Saved.' });
    assert.deepEqual([obs.messages.map((m) => m.content), r, t2, tr2, i2.terminationReason, i2.stepCount], [['Go on.'], 1, false, true, 'max_steps', 5]);
    const plain = defineEnv(notesSpec({ user: chatty })).makeEnv();
    const [, info] = await plain.reset({ seed: 1, options: { taskId: 'a' } });
    assert.equal('stepCount' in info, false, 'no stepCount without maxSteps');
  });

  it('maxErrors ends the episode after the batch that reaches it (too_many_errors, terminated, scored)', async () => {
    const env = defineEnv(notesSpec({ maxErrors: 3 })).makeEnv();
    await env.reset({ seed: 2, options: { taskId: 'a' } });
    const [, , t1, , i1] = await env.step({ content: null, toolCalls: [{ name: 'boom', arguments: {} }, { name: 'add_note', arguments: { key: 'a', text: 'hello' } }] });
    assert.deepEqual([t1, i1.numErrors], [false, 1]);
    const [obs, r, t2, tr2, i2] = await env.step({ content: null, toolCalls: [{ name: 'boom', arguments: {} }, { name: 'nope', arguments: {} }, { name: 'get_note', arguments: { key: 'a' } }] });
    assert.equal(obs.messages.length, 3, 'the whole batch runs first');
    assert.deepEqual([r, t2, tr2, i2.terminationReason, i2.numErrors], [1, true, false, 'too_many_errors', 3]);
  });

  it('doneTool changes how done is shown; prepareTurn rewrites or refuses a turn; checkTurn ends the episode before its calls run', async () => {
    const parameters = { properties: {}, required: [], title: 'parameters', type: 'object' };
    const def = defineEnv(notesSpec({
      user: chatty,
      doneTool: { parameters },
      prepareTurn: (turn) => {
        if (!turn.content && !turn.toolCalls?.length) throw new Error('empty turn refused');
        return turn.toolCalls?.some((c) => c.name === 'done') ? { content: 'STOP', toolCalls: null } : turn;
      },
      checkTurn: (m) => (m.content?.includes('STOP') ? 'agent_stop' : m.content && m.toolCalls ? 'agent_error' : null),
    }));
    const done = def.toolSpecs()!.at(-1)!;
    assert.equal(JSON.stringify(done.function.parameters), JSON.stringify(parameters), 'shown as written, key order kept');
    const env = def.makeEnv();
    await env.reset({ seed: 3, options: { taskId: 'a' } });
    await assert.rejects(env.step({ content: '' }), /empty turn refused/);
    assert.equal(env.messages.length, 1, 'nothing recorded for a refused turn (the user message only)');
    const [obs, r, terminated, , info] = await env.step({ content: 'Saving.', toolCalls: [{ name: 'add_note', arguments: { key: 'a', text: 'hello' } }] });
    assert.deepEqual([obs.messages, r, terminated, info.terminationReason], [[], 0, true, 'agent_error'], 'the call did not run');
    await env.reset({ seed: 3, options: { taskId: 'a' } });
    await env.step(call('add_note', { key: 'a', text: 'hello' }));
    const [, r2, , , i2] = await env.step(call('done', {}));
    assert.deepEqual([r2, i2.terminationReason, env.messages.at(-1)!.content], [1, 'agent_stop', 'STOP']);
    assert.throws(() => defineEnv(notesSpec({ maxSteps: 0 })), /maxSteps must be a positive integer/);
    assert.throws(() => defineEnv(notesSpec({ malformedArguments: 'drop' as never })), /malformedArguments must be 'keep' or 'empty'/);
    const bad = defineEnv(notesSpec({ user: chatty, checkTurn: () => 'maybe' as never })).makeEnv();
    await bad.reset({ seed: 3, options: { taskId: 'a' } });
    await assert.rejects(bad.step({ content: 'hi' }), (e: unknown) => e instanceof EpisodeError && /checkTurn returned "maybe"/.test(e.message));
  });

  it('callTool replaces the tool contract (and replays use it); malformedArguments empty records {} and the tool gets what was sent', async () => {
    const seen: unknown[] = [];
    const def = defineEnv(notesSpec({
      malformedArguments: 'empty',
      callTool: async (c, ctx) => {
        seen.push(c.arguments);
        const t = ctx.tools.get(c.name);
        if (!t) return { output: `Error: Tool '${c.name}' not found.`, error: true };
        if (typeof c.arguments !== 'object' || c.arguments === null || Array.isArray(c.arguments)) return { output: `Error: bad arguments ${JSON.stringify(c.arguments) ?? 'nothing'}`, error: true };
        try {
          return { output: String(await t.run(c.arguments, ctx)), error: false };
        } catch (e) {
          return { output: `Error: ${(e as Error).message}`, error: true };
        }
      },
    }));
    const env = def.makeEnv();
    await env.reset({ seed: 4, options: { taskId: 'a' } });
    const outputs: string[] = [];
    for (const args of ['[1, 2]', undefined, null, { key: 'a', extra: 1 }]) {
      const [obs] = await env.step(call('get_note', args));
      outputs.push((obs.messages[0] as ToolMessage).content);
    }
    const [obs] = await env.step(call('nope', {}));
    assert.deepEqual(outputs, ['Error: bad arguments [1,2]', 'Error: bad arguments nothing', 'Error: bad arguments null', 'Error: no note a'], 'no schema check: the hook decides');
    assert.equal((obs.messages[0] as ToolMessage).content, "Error: Tool 'nope' not found.");
    assert.deepEqual(seen.slice(0, 4), [[1, 2], undefined, null, { key: 'a', extra: 1 }]);
    const recorded = env.messages.filter((m) => m.role === 'assistant').map((m) => (m.role === 'assistant' ? m.toolCalls![0]!.arguments : null));
    assert.deepEqual(recorded.slice(0, 3), [{}, {}, {}], 'malformed arguments recorded as {}');
    await env.step(call('add_note', { key: 'a', text: 'hello' }));
    const [, r] = await env.step({ content: 'Saved a.' });
    assert.equal(r, 1, 'the gold replay ran through the hook');
    assert.deepEqual(seen.at(-1), { key: 'a', text: 'hello' });
  });

  it('a user reply { content, end } is recorded and ends the episode, at reset too; a reward breakdown is info.rewardInfo', async () => {
    const breakdown = { rewardBasis: null, rewardBreakdown: {}, dbCheck: null, actionChecks: null, communicateChecks: null, nlAssertions: null, info: { note: 'mine' } };
    const leaver = scriptedUser<Notes, NoteTask>((ctx) => (ctx.turn === 0 ? 'Save a = hello.' : { content: 'Bye ###STOP###', end: 'user_stop' }) as never);
    const env = defineEnv(notesSpec({ user: leaver, reward: () => ({ reward: 0.5, breakdown }) })).makeEnv();
    await env.reset({ seed: 5, options: { taskId: 'a' } });
    const [obs, r, terminated, , info] = await env.step({ content: 'Anything else?' });
    assert.deepEqual([obs.messages.map((m) => m.content), r, terminated, info.terminationReason], [['Bye ###STOP###'], 0.5, true, 'user_stop']);
    assert.deepEqual(info.rewardInfo, { reward: 0.5, ...breakdown });
    const silent = defineEnv(notesSpec({ user: { respond: () => ({ content: null, end: 'user_error' }) } })).makeEnv();
    const [obs0, info0] = await silent.reset({ seed: 6, options: { taskId: 'a' } });
    assert.deepEqual([obs0.messages[0]!.content, info0.terminationReason, (info0.rewardInfo as { reward: number }).reward], [null, 'user_error', 0]);
    await assert.rejects(silent.step({ content: 'hi' }), /episode ended \(user_error\)/);
  });

  it('demonstratorSession: an interactive demonstrator reads each observation; a JSON Schema with type and properties is shown as written', async () => {
    const def = defineEnv(notesSpec({
      user: chatty,
      demonstrator: undefined,
      demonstratorSession: (task, ctx) => {
        assert.equal(typeof ctx.seed, 'number');
        assert.ok(ctx.tools.some((t) => t.function.name === 'done'));
        let step = 0;
        return {
          act: (observed) => {
            step++;
            if (step === 1) return { content: `You said: ${observed[0]!.content}` };
            if (step === 2) return { toolCalls: [{ name: 'add_note', arguments: { key: task.key, text: task.text } }] };
            return { toolCalls: [{ name: 'done', arguments: {} }] };
          },
        };
      },
    }));
    const records = await demonstrationEpisodes(def, 'train', 1, { seed: 9 });
    assert.deepEqual(records.map((r) => [r.taskId, r.reward, r.terminationReason]), [['a', 1, 'agent_stop'], ['b', 1, 'agent_stop']]);
    assert.equal(records[0]!.messages[1]!.content, 'You said: Please save a = hello.');
    assert.throws(() => defineEnv(notesSpec({ demonstratorSession: () => ({ act: () => ({}) }) })), /demonstrator or demonstratorSession, not both/);
    const odd: ToolDef = { name: 'odd', description: 'x', parameters: { properties: { a: { type: 'string' } }, required: ['a'], type: 'object' }, run: () => '' };
    assert.deepEqual(Object.keys(toolSpec(odd).function.parameters!), ['properties', 'required', 'type']);
    const bare: ToolDef = { name: 'bare', description: 'x', parameters: { required: [] }, run: () => '' };
    assert.deepEqual(Object.keys(toolSpec(bare).function.parameters!), ['type', 'properties', 'required']);
  });
});

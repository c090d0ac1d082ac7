/** A tiny defined env for the API tests: notes saved and read by async tools (zod and JSON-Schema parameters). */
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { defineEnv, rewards, tool, type DefineEnvSpec, type ToolDef } from '../../../src/tooluse/api/index.ts';

export interface NoteTask {
  id: string;
  prompt: string;
  key: string;
  text: string;
  [k: string]: unknown;
}

export interface Notes {
  notes: Record<string, string>;
  disposed: boolean;
}

export const TASKS: NoteTask[] = [
  { id: 'a', prompt: 'Save the note a = hello.', key: 'a', text: 'hello' },
  { id: 'b', prompt: 'Save the note b = world.', key: 'b', text: 'world' },
];

/** What the tests look at after an episode: states made and disposed, the slow tool's abort. */
export const log = { made: 0, disposed: 0, slowAborted: false };

export const addNote = tool({
  name: 'add_note',
  description: 'Saves a note under a key.',
  parameters: z.object({ key: z.string().describe('the key'), text: z.string() }),
  async run({ key, text }, ctx: { state: Notes }) {
    await sleep(1);
    ctx.state.notes[key] = text;
    return { ok: true };
  },
});

export const getNote: ToolDef<Notes> = {
  name: 'get_note',
  description: 'Reads the note under a key.',
  parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'], additionalProperties: false },
  async run(args: { key: string }, ctx) {
    await sleep(1);
    const text = ctx.state.notes[args.key];
    if (text === undefined) throw new Error(`no note ${args.key}`);
    return text;
  },
};

export const slow: ToolDef<Notes> = {
  name: 'slow',
  description: 'Never answers.',
  parameters: { type: 'object', properties: {} },
  timeoutMs: 40,
  run(_args, ctx) {
    return new Promise((_resolve, reject) => {
      ctx.signal.addEventListener('abort', () => {
        log.slowAborted = true;
        reject(new Error('aborted'));
      });
    });
  },
};

export const boom: ToolDef<Notes> = {
  name: 'boom',
  description: 'Always fails.',
  parameters: { type: 'object', properties: {} },
  run() {
    throw new Error('kaput');
  },
};

export function notesSpec(over: Partial<DefineEnvSpec<Notes, NoteTask>> = {}): DefineEnvSpec<Notes, NoteTask> {
  return {
    id: 'test/notes-v0',
    instructions: 'You keep notes. Use the tools, then say what you did.',
    tools: [addNote, getNote, slow, boom],
    state: () => {
      log.made++;
      return { notes: {}, disposed: false };
    },
    disposeState: (s) => {
      s.disposed = true;
      log.disposed++;
    },
    tasks: { train: TASKS, val: [{ id: 'v', prompt: 'Save the note v = x.', key: 'v', text: 'x' }] },
    reward: rewards.finalState<Notes, NoteTask>({ gold: (t) => [{ name: 'add_note', arguments: { key: t.key, text: t.text } }], hash: (s) => JSON.stringify(s.notes) }),
    family: (t) => (t.id === 'a' ? 'first' : 'second'),
    demonstrator: (t) => [{ toolCalls: [{ name: 'add_note', arguments: { key: t.key, text: t.text } }] }, { content: `Saved ${t.key}.` }],
    ...over,
  };
}

export const notesEnv = () => defineEnv(notesSpec());

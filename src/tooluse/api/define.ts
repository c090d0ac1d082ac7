/**
 * `defineEnv(spec)`: checks a user's env spec and returns its `EnvDefinition`, which loads the tasks of a split and
 * makes `DefinedToolEnv`s (src/tooluse/api/env.ts) for the agent loop, the gym registry and the env server.
 */
import type { ToolSpec } from '../../llm/index.ts';
import { parseEnvId } from '../../gym/registry/env-id.ts';
import { DefinedToolEnv, DONE_TOOL_SPEC, doneToolSpec, type DefinedEnvOptions } from './env.ts';
import { errorMessage, EpisodeError } from './errors.ts';
import { checkToolDef, toolSpec } from './tool.ts';
import type { DefineEnvSpec, Task } from './types.ts';

const BRAND = Symbol.for('longrun.EnvDefinition');

export const DEFAULT_MAX_TURNS = 30;

/** A checked env spec. Made by `defineEnv`; `spec` is the object it was given. */
export class EnvDefinition<S = unknown, T extends Task = Task> {
  readonly id: string;
  readonly spec: DefineEnvSpec<S, T>;
  private readonly taskCache = new Map<string, Promise<T[]>>();

  constructor(spec: DefineEnvSpec<S, T>) {
    checkSpec(spec as unknown as DefineEnvSpec);
    this.id = spec.id;
    this.spec = spec;
    Object.defineProperty(this, BRAND, { value: true, enumerable: false });
  }

  /** Whether the agent talks to a user (then the `done` tool is added), or the task's prompt opens a single-agent episode. */
  get hasUser(): boolean {
    return this.spec.user !== undefined;
  }

  get maxTurns(): number {
    return this.spec.maxTurns ?? DEFAULT_MAX_TURNS;
  }

  /** The split names when `tasks` is a record, `['train']` for an array, null for a function (any split). */
  splits(): string[] | null {
    const t = this.spec.tasks;
    if (Array.isArray(t)) return ['train'];
    return typeof t === 'function' ? null : Object.keys(t);
  }

  /**
   * The tasks of a split (default 'train'), checked (objects with unique string ids) and cached. Throws an
   * EpisodeError naming the env and split when there is no such split, the task function throws, or a task is bad.
   */
  tasks(split = 'train'): Promise<T[]> {
    let p = this.taskCache.get(split);
    if (!p) {
      p = this.loadTasks(split);
      this.taskCache.set(split, p);
      p.catch(() => this.taskCache.delete(split)); // a failed load is retried next time
    }
    return p;
  }

  private async loadTasks(split: string): Promise<T[]> {
    const t = this.spec.tasks;
    const where = `env ${this.id}, split '${split}'`;
    let list: unknown;
    if (Array.isArray(t)) {
      if (split !== 'train') throw new EpisodeError(`${where}: tasks is a list, which is split 'train'; give tasks as { train: [...], ${split}: [...] } or a function of the split`, { env: this.id });
      list = t;
    } else if (typeof t === 'function') {
      try {
        list = await t(split);
      } catch (e) {
        throw new EpisodeError(`${where}: the tasks function threw: ${errorMessage(e)}`, { cause: e, env: this.id });
      }
    } else {
      if (!Object.hasOwn(t, split)) throw new EpisodeError(`${where}: no such split; the splits are ${Object.keys(t).join(', ') || '(none)'}`, { env: this.id });
      list = t[split];
    }
    if (!Array.isArray(list)) throw new EpisodeError(`${where}: the tasks must be an array, got ${list === null ? 'null' : typeof list}`, { env: this.id });
    if (list.length === 0) throw new EpisodeError(`${where}: no tasks`, { env: this.id });
    const seen = new Map<string, number>();
    list.forEach((task: unknown, i) => {
      if (typeof task !== 'object' || task === null || Array.isArray(task)) throw new EpisodeError(`${where}: task ${i} is not an object`, { env: this.id });
      const id = (task as { id?: unknown }).id;
      if (typeof id !== 'string' || id === '') throw new EpisodeError(`${where}: task ${i} has no string id (got ${JSON.stringify(id)})`, { env: this.id });
      if (seen.has(id)) throw new EpisodeError(`${where}: tasks ${seen.get(id)} and ${i} share the id ${id}`, { env: this.id });
      seen.set(id, i);
    });
    return list as T[];
  }

  /**
   * The tools the agent is shown when they are known without opening an episode (no sources): the spec's tools, then
   * `done` when there is a user. Null when the env has sources (their tools come with each episode's `info.tools`).
   */
  toolSpecs(): ToolSpec[] | null {
    if ((this.spec.sources ?? []).length > 0) return null;
    return [...(this.spec.tools ?? []).map(toolSpec), ...(this.hasUser ? [doneToolSpec(this.spec)] : [])];
  }

  /** A task's family (`spec.family`), or undefined. */
  familyOf(task: T): string | undefined {
    return this.spec.family?.(task);
  }

  /** A fresh env (one episode at a time) over a split's tasks, or the given tasks. */
  makeEnv(options: DefinedEnvOptions<T> = {}): DefinedToolEnv<S, T> {
    return new DefinedToolEnv(this, options);
  }

  static [Symbol.hasInstance](x: unknown): boolean {
    return typeof x === 'object' && x !== null && (x as Record<symbol, unknown>)[BRAND] === true;
  }
}

/** An env definition of any state and task type. */
export type AnyEnvDefinition = EnvDefinition<any, any>;

/** Whether `x` is an EnvDefinition (of this copy of longrun or another). */
export function isEnvDefinition(x: unknown): x is AnyEnvDefinition {
  return x instanceof EnvDefinition;
}

function checkSpec(spec: DefineEnvSpec): void {
  if (typeof spec !== 'object' || spec === null) throw new TypeError(`defineEnv: needs a spec object, got ${spec === null ? 'null' : typeof spec}`);
  if (typeof spec.id !== 'string' || spec.id === '') throw new TypeError('defineEnv: needs an id (a string like my-task-v0)');
  try {
    parseEnvId(spec.id);
  } catch (e) {
    throw new TypeError(`defineEnv: ${errorMessage(e)}`, { cause: e });
  }
  const where = `env ${spec.id}`;
  if (typeof spec.instructions !== 'string') throw new TypeError(`${where}: instructions (the agent's system prompt) must be a string`);
  if (typeof spec.reward !== 'function') throw new TypeError(`${where}: reward must be a function of the finished episode`);
  const t = spec.tasks as unknown;
  if (!(Array.isArray(t) || typeof t === 'function' || (typeof t === 'object' && t !== null))) throw new TypeError(`${where}: tasks must be an array, a { split: tasks } record or a function of the split`);
  for (const k of ['state', 'disposeState', 'family', 'demonstrator', 'demonstratorSession', 'prepareTurn', 'checkTurn', 'callTool'] as const) {
    if (spec[k] !== undefined && typeof spec[k] !== 'function') throw new TypeError(`${where}: ${k} must be a function`);
  }
  for (const k of ['maxSteps', 'maxErrors'] as const) {
    const v = spec[k];
    if (v !== undefined && !(Number.isInteger(v) && v >= 1)) throw new TypeError(`${where}: ${k} must be a positive integer, got ${String(v)}`);
  }
  if (spec.malformedArguments !== undefined && spec.malformedArguments !== 'keep' && spec.malformedArguments !== 'empty') {
    throw new TypeError(`${where}: malformedArguments must be 'keep' or 'empty', got ${JSON.stringify(spec.malformedArguments)}`);
  }
  const d = spec.doneTool as unknown;
  if (d !== undefined) {
    const o = d as { description?: unknown; parameters?: unknown };
    if (typeof d !== 'object' || d === null || Array.isArray(d)) throw new TypeError(`${where}: doneTool must be an object { description?, parameters? }`);
    if (o.description !== undefined && typeof o.description !== 'string') throw new TypeError(`${where}: doneTool.description must be a string`);
    if (o.parameters !== undefined && (typeof o.parameters !== 'object' || o.parameters === null || Array.isArray(o.parameters))) throw new TypeError(`${where}: doneTool.parameters must be a JSON Schema object`);
  }
  if (spec.demonstrator !== undefined && spec.demonstratorSession !== undefined) throw new TypeError(`${where}: give demonstrator or demonstratorSession, not both`);
  if (spec.greeting !== undefined && typeof spec.greeting !== 'string') throw new TypeError(`${where}: greeting must be a string`);
  if (spec.maxTurns !== undefined && !(Number.isInteger(spec.maxTurns) && spec.maxTurns >= 1)) throw new TypeError(`${where}: maxTurns must be a positive integer, got ${String(spec.maxTurns)}`);
  if (spec.user !== undefined && (typeof spec.user !== 'object' || spec.user === null || typeof spec.user.respond !== 'function')) {
    throw new TypeError(`${where}: user must be an object with respond(ctx) (scriptedUser(...), llmUser(...))`);
  }
  if (spec.tools !== undefined && !Array.isArray(spec.tools)) throw new TypeError(`${where}: tools must be an array`);
  const names = new Set<string>();
  for (const tl of spec.tools ?? []) {
    checkToolDef(tl, where);
    if (names.has(tl.name)) throw new TypeError(`${where}: two tools are named ${tl.name}`);
    if (spec.user !== undefined && tl.name === DONE_TOOL_SPEC.function.name) throw new TypeError(`${where}: the tool name done is taken: an env with a user gives the agent a done tool to end the conversation`);
    names.add(tl.name);
  }
  if (spec.sources !== undefined && !Array.isArray(spec.sources)) throw new TypeError(`${where}: sources must be an array`);
  const sourceNames = new Set<string>();
  for (const s of spec.sources ?? []) {
    if (typeof s !== 'object' || s === null || typeof s.name !== 'string' || typeof s.open !== 'function') throw new TypeError(`${where}: each source needs a name and open(ctx) (e.g. mcpServer({ command, args }))`);
    if (sourceNames.has(s.name)) throw new TypeError(`${where}: two sources are named ${s.name}`);
    sourceNames.add(s.name);
  }
}

/** Checks an env spec and returns its definition. */
export function defineEnv<S = undefined, T extends Task = Task>(spec: DefineEnvSpec<S, T>): EnvDefinition<S, T> {
  return new EnvDefinition(spec);
}

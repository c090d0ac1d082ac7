/**
 * Tools: `tool()` for a zod-typed tool, the JSON Schema shown to the model for either kind of parameters, argument
 * validation (zod's own, or ajv for JSON Schema), and `callTool`, which turns every failure of a call (unknown tool,
 * bad arguments, a throw, a timeout) into tool-result text the agent sees, `Error: …`.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { z } from 'zod';
import type { ToolSpec } from '../../llm/index.ts';
import { EpisodeError, errorMessage } from './errors.ts';
import type { JsonSchema, Task, ToolCallOutcome, ToolContext, ToolDef } from './types.ts';

export const DEFAULT_TOOL_TIMEOUT_MS = 30_000;

/** A tool with zod parameters; `run` gets them typed. */
export function tool<P extends z.ZodType, S = unknown, T extends Task = Task>(def: {
  name: string;
  description: string;
  parameters: P;
  timeoutMs?: number;
  kind?: 'read' | 'write' | 'generic';
  run(args: z.infer<P>, ctx: ToolContext<S, T>): unknown | Promise<unknown>;
}): ToolDef<S, T> {
  checkToolDef(def as ToolDef<S, T>, 'tool()');
  return { ...def };
}

/** A zod 4 schema (of this copy of zod or another): it carries `_zod` and `safeParse`. */
export function isZodSchema(x: unknown): x is z.ZodType {
  return typeof x === 'object' && x !== null && '_zod' in x && typeof (x as { safeParse?: unknown }).safeParse === 'function';
}

const NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/;

/** Throws a clear error for a malformed tool definition; `where` names the env or source. */
export function checkToolDef(t: ToolDef, where: string): void {
  if (typeof t !== 'object' || t === null) throw new TypeError(`${where}: a tool must be an object { name, description, parameters, run }, got ${t === null ? 'null' : typeof t}`);
  if (typeof t.name !== 'string' || !NAME_RE.test(t.name)) throw new TypeError(`${where}: tool name ${JSON.stringify(t.name)} must be 1–64 letters, digits, _ . or -`);
  if (typeof t.description !== 'string') throw new TypeError(`${where}: tool ${t.name} needs a string description`);
  if (typeof t.run !== 'function') throw new TypeError(`${where}: tool ${t.name} needs a run function`);
  if (t.timeoutMs !== undefined && !(typeof t.timeoutMs === 'number' && t.timeoutMs > 0)) throw new TypeError(`${where}: tool ${t.name}: timeoutMs must be a positive number, got ${String(t.timeoutMs)}`);
  const p = t.parameters as unknown;
  if (isZodSchema(p)) return;
  if (typeof p === 'object' && p !== null && ('_def' in p || 'safeParse' in p)) {
    throw new TypeError(`${where}: tool ${t.name}: parameters look like a zod 3 schema; longrun needs zod 4 (import { z } from 'zod' with zod >= 4)`);
  }
  if (typeof p !== 'object' || p === null || Array.isArray(p)) throw new TypeError(`${where}: tool ${t.name}: parameters must be a zod schema or a JSON Schema object`);
  const type = (p as JsonSchema).type;
  if (type !== undefined && type !== 'object') throw new TypeError(`${where}: tool ${t.name}: parameters must describe an object (type: 'object'), got type ${JSON.stringify(type)}`);
  schemaValidator(t.name, p as JsonSchema, where); // compiles it, so a bad schema fails here
}

/** Zod's JSON Schema without the noise a model need not read ($schema, ±2^53 integer bounds). */
function cleanSchema(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(cleanSchema);
  if (typeof x !== 'object' || x === null) return x;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(x)) {
    if (k === '$schema') continue;
    if ((k === 'maximum' && v === Number.MAX_SAFE_INTEGER) || (k === 'minimum' && v === Number.MIN_SAFE_INTEGER)) continue;
    out[k] = cleanSchema(v);
  }
  return out;
}

const jsonSchemas = new WeakMap<object, JsonSchema>();

/**
 * The parameters' JSON Schema, as the model is shown it (zod: `z.toJSONSchema`, input side, so defaults are optional).
 * A JSON Schema with `type: 'object'` and `properties` is shown as written, key order included (the chat formats
 * print it); one without them gets them in front.
 */
export function parametersSchema(t: ToolDef): JsonSchema {
  const p = t.parameters as unknown;
  if (!isZodSchema(p)) {
    const js = p as JsonSchema;
    return js.type === 'object' && Object.hasOwn(js, 'properties') ? js : { type: 'object', properties: {}, ...js };
  }
  let s = jsonSchemas.get(p);
  if (!s) {
    try {
      s = cleanSchema(z.toJSONSchema(p, { io: 'input', unrepresentable: 'any' })) as JsonSchema;
    } catch (e) {
      throw new TypeError(`tool ${t.name}: its zod parameters have no JSON Schema (${errorMessage(e)})`, { cause: e });
    }
    jsonSchemas.set(p, s);
  }
  return s;
}

/** The tool as the chat formats render it (OpenAI's function-tool shape). */
export function toolSpec(t: ToolDef): ToolSpec {
  return { type: 'function', function: { name: t.name, description: t.description, parameters: parametersSchema(t) } };
}

let ajv: Ajv2020 | null = null;
const validators = new WeakMap<object, ValidateFunction>();

function schemaValidator(name: string, schema: JsonSchema, where = 'tool'): ValidateFunction {
  let v = validators.get(schema);
  if (v) return v;
  ajv ??= new Ajv2020({ allErrors: true, strict: false, validateFormats: false });
  const { $schema: _ignored, ...rest } = schema; // draft-07 and 2020-12 tool schemas alike
  try {
    v = ajv.compile({ type: 'object', ...rest });
  } catch (e) {
    throw new TypeError(`${where}: tool ${name}: parameters are not a valid JSON Schema: ${errorMessage(e)}`, { cause: e });
  }
  validators.set(schema, v);
  return v;
}

function ajvErrors(errors: readonly ErrorObject[]): string {
  return errors.map((e) => `${e.instancePath === '' ? '(arguments)' : e.instancePath.slice(1).replaceAll('/', '.')}: ${e.message ?? 'invalid'}${e.keyword === 'additionalProperties' ? ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})` : ''}`).join('; ');
}

/** The validated (zod: parsed, with defaults) arguments, or the reason they fail. */
export function validateArguments(t: ToolDef, args: unknown): { ok: true; value: unknown } | { ok: false; error: string } {
  const p = t.parameters as unknown;
  if (isZodSchema(p)) {
    const r = p.safeParse(args);
    if (r.success) return { ok: true, value: r.data };
    return { ok: false, error: r.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(arguments)'}: ${i.message}`).join('; ') };
  }
  const v = schemaValidator(t.name, p as JsonSchema);
  if (v(args)) return { ok: true, value: args };
  return { ok: false, error: ajvErrors(v.errors ?? []) };
}

export type { ToolCallOutcome } from './types.ts';

function render(result: unknown): string {
  if (typeof result === 'string') return result;
  if (result === undefined) return '';
  return JSON.stringify(result) ?? String(result);
}

/**
 * Runs one call: unknown tool, invalid arguments, a throw, a timeout (`timeoutMs`, default 30 s: the call's signal
 * aborts and its result is dropped) all come back as `{ output: 'Error: …', error: true }`.
 */
export async function callTool<S, T extends Task>(
  tools: ReadonlyMap<string, ToolDef<S, T>>,
  call: { name: string; arguments: unknown },
  ctx: Omit<ToolContext<S, T>, 'signal'> & { signal: AbortSignal },
): Promise<ToolCallOutcome> {
  const t = tools.get(call.name);
  if (!t) return { output: `Error: unknown tool '${call.name}'; the tools are: ${[...tools.keys()].join(', ') || '(none)'}`, error: true };
  if (typeof call.arguments !== 'object' || call.arguments === null || Array.isArray(call.arguments)) {
    return { output: `Error: the arguments of ${t.name} must be a JSON object, got ${render(call.arguments).slice(0, 200)}`, error: true };
  }
  const checked = validateArguments(t, call.arguments);
  if (!checked.ok) return { output: `Error: invalid arguments for ${t.name}: ${checked.error}`, error: true };
  const timeoutMs = t.timeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS;
  const controller = new AbortController();
  const onEpisodeAbort = () => controller.abort(ctx.signal.reason);
  if (ctx.signal.aborted) controller.abort(ctx.signal.reason);
  else ctx.signal.addEventListener('abort', onEpisodeAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  try {
    const running = Promise.resolve().then(() => t.run(checked.value, { ...ctx, signal: controller.signal }));
    running.catch(() => {}); // a call that rejects after its timeout is not an unhandled rejection
    const r = await Promise.race([running.then((value) => ({ value })), timeout]);
    if (r === 'timeout') {
      controller.abort(new Error(`tool ${t.name} timed out after ${timeoutMs} ms`));
      return { output: `Error: tool ${t.name} timed out after ${timeoutMs} ms`, error: true };
    }
    try {
      return { output: render(r.value), error: false };
    } catch (e) {
      return { output: `Error: the result of ${t.name} is not JSON-serializable (${errorMessage(e)})`, error: true };
    }
  } catch (e) {
    // A failure of the env itself (e.g. an MCP server that died) ends the episode as an env error, not a tool error.
    if (e instanceof EpisodeError) throw e;
    return { output: `Error: ${errorMessage(e)}`, error: true };
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener('abort', onEpisodeAbort);
  }
}

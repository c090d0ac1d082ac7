import { sampleJsonSchema, validateJsonSchema, type JsonSchema } from './json-schema.ts';
import { isPlainObject, maskOn, Space, type Json, type SpaceJSON } from './space.ts';

/** An OpenAI function-calling tool schema (structurally the same as `ToolSchema` in src/tooluse). */
export interface FunctionToolSchema {
  type: 'function';
  function: { name: string; description?: string; parameters?: { [key: string]: unknown } };
}

/** One tool call: the tool's name and its arguments as a parsed JSON object. */
export interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/**
 * Calls to one of a fixed set of tools. `contains` checks that `name` is a known tool and that `arguments` (an
 * object, not a JSON string) satisfies the tool's JSON-schema `parameters` (see json-schema.ts for the subset);
 * `explain` says why not. `sample(mask?)` picks a tool uniformly (among those where `mask` is 1) and draws valid
 * arguments for it.
 */
export class ToolCallSpace extends Space<ToolCall, ArrayLike<number | boolean>> {
  readonly type = 'ToolCall';
  readonly tools: readonly FunctionToolSchema[];
  private readonly byName: Map<string, FunctionToolSchema>;

  constructor(tools: readonly FunctionToolSchema[], options: { seed?: number } = {}) {
    super();
    if (tools.length === 0) throw new RangeError('ToolCallSpace: needs at least one tool');
    this.byName = new Map();
    for (const t of tools) {
      if (t?.type !== 'function' || typeof t.function?.name !== 'string' || t.function.name === '') {
        throw new TypeError(`ToolCallSpace: each tool must be {type: 'function', function: {name, parameters}}, got ${JSON.stringify(t)}`);
      }
      if (this.byName.has(t.function.name)) throw new RangeError(`ToolCallSpace: duplicate tool name "${t.function.name}"`);
      if (t.function.parameters !== undefined && !isPlainObject(t.function.parameters)) throw new TypeError(`ToolCallSpace: parameters of "${t.function.name}" must be an object schema`);
      this.byName.set(t.function.name, t);
    }
    this.tools = Object.freeze(structuredClone([...tools]));
    if (options.seed !== undefined) this.seed(options.seed);
  }

  get toolNames(): string[] {
    return this.tools.map((t) => t.function.name);
  }

  private parametersOf(name: string): JsonSchema {
    return (this.byName.get(name)?.function.parameters ?? { type: 'object', properties: {} }) as JsonSchema;
  }

  /** Null if `x` is a valid call, else the reason it is not. */
  explain(x: unknown): string | null {
    if (!isPlainObject(x)) return 'a tool call must be an object {name, arguments}';
    const extra = Object.keys(x).filter((k) => k !== 'name' && k !== 'arguments');
    if (extra.length > 0) return `unexpected keys in tool call: ${extra.join(', ')}`;
    if (typeof x.name !== 'string') return 'tool call "name" must be a string';
    if (!this.byName.has(x.name)) return `unknown tool "${x.name}"; known tools: ${this.toolNames.join(', ')}`;
    if (!isPlainObject(x.arguments)) return `"arguments" of ${x.name} must be an object`;
    const err = validateJsonSchema({ type: 'object', ...this.parametersOf(x.name) }, x.arguments, 'arguments');
    return err === null ? null : `${x.name}: ${err}`;
  }

  contains(x: unknown): x is ToolCall {
    return this.explain(x) === null;
  }

  sample(mask?: ArrayLike<number | boolean>): ToolCall {
    let candidates = this.tools;
    if (mask !== undefined) {
      if (mask.length !== this.tools.length) throw new RangeError(`ToolCallSpace.sample: mask length ${mask.length} != ${this.tools.length} tools`);
      candidates = this.tools.filter((_, i) => maskOn(mask, i));
      if (candidates.length === 0) throw new RangeError('ToolCallSpace.sample: the mask allows no tool');
    }
    const tool = this.npRandom.choice(candidates);
    const args = sampleJsonSchema({ type: 'object', ...this.parametersOf(tool.function.name) }, this.npRandom) as Record<string, unknown>;
    return { name: tool.function.name, arguments: args };
  }

  equals(other: unknown): boolean {
    return other instanceof ToolCallSpace && JSON.stringify(other.tools) === JSON.stringify(this.tools);
  }

  toJSON(): SpaceJSON {
    return { type: this.type, tools: this.tools as unknown as Json };
  }

  override toString(): string {
    return `ToolCallSpace(${this.toolNames.join(', ')})`;
  }
}

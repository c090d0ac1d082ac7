/**
 * Executes one tool call against a domain's DB with τ²-bench's error contract (tau2.md §3.1): every failure becomes a
 * tool result `"Error: " + message` with `error: true`; the function itself never throws.
 */
import type { Domain, Tool } from './types.ts';
import { ToolError } from './types.ts';

export interface ToolCallRequest {
  name: string;
  arguments: unknown;
}

export interface ToolCallResult {
  output: string;
  error: boolean;
}

/** Finds a tool by name; domains are small (tens of tools), and a per-domain index is built once and cached. */
const toolIndexCache = new WeakMap<readonly Tool<unknown>[], Map<string, Tool<unknown>>>();

export function findTool<DB>(domain: Domain<DB>, name: string): Tool<DB> | undefined {
  const tools = domain.tools as readonly Tool<unknown>[];
  let index = toolIndexCache.get(tools);
  if (!index) {
    index = new Map(tools.map((t) => [t.name, t]));
    toolIndexCache.set(tools, index);
  }
  return index.get(name) as Tool<DB> | undefined;
}

export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describeJsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value === undefined) return 'nothing';
  return `a ${typeof value}`;
}

/** CPython's list formatting for missing arguments: 'a' / 'a' and 'b' / 'a', 'b', and 'c'. */
function formatNameList(names: readonly string[]): string {
  const quoted = names.map((n) => `'${n}'`);
  if (quoted.length === 1) return quoted[0]!;
  if (quoted.length === 2) return `${quoted[0]} and ${quoted[1]}`;
  return `${quoted.slice(0, -1).join(', ')}, and ${quoted[quoted.length - 1]}`;
}

/**
 * The TypeError CPython raises when `Class.tool(**args)` does not bind, or null when it binds. CPython checks the
 * keywords first (the first unknown one, in the order given), then reports every missing parameter at once.
 */
export function pythonBindingError(className: string, tool: { name: string; params: readonly string[] }, args: Record<string, unknown>): string | null {
  const qualified = `${className}.${tool.name}()`;
  const known = new Set(tool.params);
  for (const key of Object.keys(args)) {
    if (!known.has(key)) return `${qualified} got an unexpected keyword argument '${key}'`;
  }
  const missing = tool.params.filter((p) => !Object.hasOwn(args, p));
  if (missing.length === 0) return null;
  const noun = missing.length === 1 ? 'argument' : 'arguments';
  return `${qualified} missing ${missing.length} required positional ${noun}: ${formatNameList(missing)}`;
}

function errorMessage(err: unknown): string {
  if (err instanceof ToolError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

export function executeToolCall<DB>(domain: Domain<DB>, db: DB, call: ToolCallRequest): ToolCallResult {
  const tool = findTool(domain, call.name);
  if (!tool) return { output: `Error: Tool '${call.name}' not found.`, error: true };
  const args = call.arguments;
  if (!isJsonObject(args)) {
    return {
      output: `Error: Arguments of tool '${call.name}' must be a JSON object of named arguments, got ${describeJsonType(args)}.`,
      error: true,
    };
  }
  const bindError = pythonBindingError(domain.toolsClassName, tool, args);
  if (bindError !== null) return { output: `Error: ${bindError}`, error: true };
  try {
    return { output: tool.invoke(db, args), error: false };
  } catch (err) {
    return { output: `Error: ${errorMessage(err)}`, error: true };
  }
}

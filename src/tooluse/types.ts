/**
 * The seam between the domain-agnostic tool-use kit (src/tooluse) and a concrete domain (src/domains/*).
 * A domain is data (a DB) + tools + a policy text, as in τ²-bench.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Whether a tool reads, writes (mutates the DB, replayed by the evaluator) or does neither. */
export type ToolKind = 'read' | 'write' | 'generic';

/** An OpenAI function-calling schema, as τ²-bench sends it to the model. */
export interface ToolSchema {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, Json> };
}

/** Thrown by a tool for an error the original implementation raises; rendered as `"Error: " + message`. */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolError';
  }
}

/** One tool of a domain. `invoke` receives the raw JSON arguments (no coercion, as in τ²) and returns the rendered output. */
export interface Tool<DB> {
  readonly name: string;
  readonly kind: ToolKind;
  /** Parameter names in declaration order (used for Python-style missing/extra argument errors). */
  readonly params: readonly string[];
  readonly schema: ToolSchema;
  invoke(db: DB, args: Record<string, unknown>): string;
}

/** A tool-use domain. `freshDb()` must be cheap (an episode reset), and `hashDb` must be a pure function of the state. */
export interface Domain<DB> {
  readonly name: string;
  /** The policy text given to the agent as its system prompt. */
  readonly policy: string;
  /** Tools in the order they are shown to the model. */
  readonly tools: readonly Tool<DB>[];
  /** Class name used in Python-style argument error messages (e.g. `RetailTools`). */
  readonly toolsClassName: string;
  freshDb(): DB;
  hashDb(db: DB): string;
}

/**
 * Builds a `Tool<RetailDb>` from a description: the OpenAI function schema as τ² renders it (pydantic JSON schema
 * titled "parameters", every parameter required, keys in pydantic's sorted order) and an `invoke` that renders the
 * result like τ² (a str as-is, a model as Python `json.dumps` of `model_dump()`, keys in model field order) and turns
 * any failure into a `ToolError`.
 */
import { ToolError, type Json, type Tool, type ToolKind } from '../../../tooluse/types.ts';
import type { RetailDb } from '../db.ts';
import { PyError } from '../calculate.ts';
import { pyJsonDumps } from '../../../tooluse/python/pyjson.ts';

export interface ParamSpec {
  name: string;
  type: 'string' | 'string[]';
  description: string;
}

export interface ToolSpec {
  name: string;
  kind: ToolKind;
  /** One-line summary, then (optionally) a longer paragraph; τ² joins them with a blank line. */
  summary: string;
  details?: string;
  params: ParamSpec[];
  /** Returns a str (sent as-is) or a DB record (sent as JSON in model field order). */
  run(db: RetailDb, args: Record<string, unknown>): string | object;
}

/** pydantic's default field title: `order_id` → `Order Id`. */
export function fieldTitle(name: string): string {
  return name
    .split('_')
    .map((w) => (w.length === 0 ? w : w[0].toUpperCase() + w.slice(1).toLowerCase()))
    .join(' ');
}

function parametersSchema(params: readonly ParamSpec[]): Record<string, Json> {
  const properties: Record<string, Json> = {};
  for (const p of params) {
    properties[p.name] =
      p.type === 'string'
        ? { description: p.description, title: fieldTitle(p.name), type: 'string' }
        : { description: p.description, items: { type: 'string' }, title: fieldTitle(p.name), type: 'array' };
  }
  const schema: Record<string, Json> = { properties };
  if (params.length > 0) schema.required = params.map((p) => p.name);
  schema.title = 'parameters';
  schema.type = 'object';
  return schema;
}

export function defineTool(spec: ToolSpec): Tool<RetailDb> {
  const description = spec.details ? `${spec.summary}\n\n${spec.details}` : spec.summary;
  return {
    name: spec.name,
    kind: spec.kind,
    params: spec.params.map((p) => p.name),
    schema: { type: 'function', function: { name: spec.name, description, parameters: parametersSchema(spec.params) } },
    invoke(db: RetailDb, args: Record<string, unknown>): string {
      try {
        const result = spec.run(db, args);
        return typeof result === 'string' ? result : pyJsonDumps(result);
      } catch (err) {
        if (err instanceof ToolError) throw err;
        if (err instanceof PyError) throw new ToolError(err.message);
        const why = err instanceof Error ? err.message : String(err);
        throw new ToolError(`Internal error in ${spec.name}: ${why}`);
      }
    },
  };
}

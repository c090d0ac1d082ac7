/**
 * A tiny key-value domain for testing the tool-use kit without the retail data: a DB of string values, two read
 * tools, two write tools, a generic tool, and tools that fail in the ways τ² tools fail.
 */
import { createHash } from 'node:crypto';
import type { Domain, Tool, ToolKind } from '../../src/tooluse/types.ts';
import { ToolError } from '../../src/tooluse/types.ts';

export interface KvDb {
  values: Record<string, string>;
}

function tool(name: string, kind: ToolKind, params: string[], invoke: (db: KvDb, args: Record<string, unknown>) => string): Tool<KvDb> {
  const properties = Object.fromEntries(params.map((p) => [p, { type: 'string', description: p }]));
  return {
    name,
    kind,
    params,
    schema: { type: 'function', function: { name, description: `The ${name} tool.`, parameters: { type: 'object', properties, required: params } } },
    invoke,
  };
}

export const KV_TOOLS: Tool<KvDb>[] = [
  tool('get_value', 'read', ['key'], (db, { key }) => {
    const v = db.values[key as string];
    if (v === undefined) throw new ToolError('Key not found');
    return v;
  }),
  tool('list_keys', 'read', [], (db) => JSON.stringify(Object.keys(db.values).sort())),
  tool('set_value', 'write', ['key', 'value'], (db, { key, value }) => {
    if (typeof value !== 'string') throw new ToolError('Value must be a string');
    db.values[key as string] = value;
    return `Set ${String(key)}`;
  }),
  tool('delete_value', 'write', ['key'], (db, { key }) => {
    if (!(key as string in db.values)) throw new ToolError('Key not found');
    delete db.values[key as string];
    return `Deleted ${String(key)}`;
  }),
  tool('concat', 'generic', ['a', 'b', 'c'], (_db, { a, b, c }) => `${String(a)}${String(b)}${String(c)}`),
  tool('crash', 'generic', [], () => {
    throw new TypeError("'NoneType' object is not subscriptable");
  }),
];

export const KV_INITIAL: Record<string, string> = { apple: 'red', banana: 'yellow' };

export function createKvDomain(): Domain<KvDb> {
  return {
    name: 'kv',
    policy: 'You manage a key-value store. Only change values the user asks for.',
    tools: KV_TOOLS,
    toolsClassName: 'KvTools',
    freshDb: () => ({ values: { ...KV_INITIAL } }),
    hashDb: (db) => {
      const keys = Object.keys(db.values).sort();
      return createHash('sha256').update(JSON.stringify(keys.map((k) => [k, db.values[k]]))).digest('hex');
    },
  };
}

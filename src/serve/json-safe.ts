/**
 * Converts env results to plain JSON: functions and `undefined` are dropped, Maps become objects, Sets and typed
 * arrays become arrays, bigints become strings, non-finite numbers become null, class instances with `toJSON` use it,
 * and a cycle becomes the string "[Circular]". Nothing the env returns can make the server's reply fail to encode.
 */
import type { Json } from '../gym/spaces/index.ts';

export function toJsonSafe(value: unknown, seen: Set<object> = new Set()): Json | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : null;
    case 'bigint':
      return value.toString();
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (value === null) return null;
  const obj = value as object;
  if (seen.has(obj)) return '[Circular]';
  seen.add(obj);
  try {
    if (ArrayBuffer.isView(obj)) return Array.from(obj as unknown as ArrayLike<number>, (x) => toJsonSafe(x, seen) ?? null);
    if (Array.isArray(obj)) return obj.map((x) => toJsonSafe(x, seen) ?? null);
    if (obj instanceof Map) {
      const out: Record<string, Json> = {};
      for (const [k, v] of obj) {
        const j = toJsonSafe(v, seen);
        if (j !== undefined) out[String(k)] = j;
      }
      return out;
    }
    if (obj instanceof Set) return [...obj].map((x) => toJsonSafe(x, seen) ?? null);
    if (obj instanceof Date) return obj.toISOString();
    if (obj instanceof Error) return { name: obj.name, message: obj.message };
    const withToJSON = obj as { toJSON?: () => unknown };
    if (typeof withToJSON.toJSON === 'function') return toJsonSafe(withToJSON.toJSON(), seen);
    const out: Record<string, Json> = {};
    for (const [k, v] of Object.entries(obj)) {
      const j = toJsonSafe(v, seen);
      if (j !== undefined) out[k] = j;
    }
    return out;
  } finally {
    seen.delete(obj);
  }
}

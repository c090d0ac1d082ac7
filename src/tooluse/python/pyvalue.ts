/**
 * How Python sees a raw JSON argument value: type names, `str()` and `repr()`, iteration, dict-key lookups and
 * `len()`. τ² passes tool arguments through uncoerced, so a wrong-typed argument meets Python's own semantics and
 * error messages; these helpers reproduce the common ones.
 *
 * JSON numbers: `JSON.parse` loses the int/float distinction, so an integral number is treated as a Python int.
 */
import { ToolError } from '../types.ts';
import { compareCodePoints, pyFloatRepr } from './pyjson.ts';

/** A JSON number that Python's `json.loads` reads as a float although it is integral (e.g. `1.0`). */
export class PyFloat {
  constructor(readonly value: number) {}
}

/** Python `type(v).__name__` for a parsed JSON value. */
export function pyTypeName(v: unknown): string {
  if (v === null || v === undefined) return 'NoneType';
  if (v instanceof PyFloat) return 'float';
  if (typeof v === 'string') return 'str';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  if (Array.isArray(v)) return 'list';
  return 'dict';
}

function pyStrRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += '\\' + quote;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (c < 0x20 || (c >= 0x7f && c <= 0xa0)) out += '\\x' + c.toString(16).padStart(2, '0');
    else out += ch;
  }
  return out + quote;
}

function pyNumberRepr(v: number): string {
  return Number.isInteger(v) ? v.toFixed(0) : pyFloatRepr(v);
}

/** Python `repr()` of a parsed JSON value. */
export function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'string') return pyStrRepr(v);
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number') return pyNumberRepr(v);
  if (v instanceof PyFloat) return pyFloatRepr(v.value);
  if (Array.isArray(v)) return '[' + v.map(pyRepr).join(', ') + ']';
  const entries = v instanceof Map ? [...v.entries()] : Object.entries(v as object);
  return '{' + entries.map(([k, x]) => `${pyRepr(k)}: ${pyRepr(x)}`).join(', ') + '}';
}

/** Python `str()` of a parsed JSON value (as an f-string interpolates it). */
export function pyStr(v: unknown): string {
  return typeof v === 'string' ? v : pyRepr(v);
}

/** `key in some_dict` / `some_dict[key]` with str keys: unhashable keys raise, other non-strings are simply absent. */
export function dictGet<V>(map: ReadonlyMap<string, V>, key: unknown): V | undefined {
  if (typeof key === 'string') return map.get(key);
  assertHashable(key);
  return undefined;
}

/** Raises Python's `TypeError: unhashable type: 'list'` (or `'dict'`) for a value that cannot be a dict key. */
export function assertHashable(key: unknown): void {
  if (key !== null && typeof key === 'object' && !(key instanceof PyFloat)) throw new ToolError(`unhashable type: '${pyTypeName(key)}'`);
}

/** `for x in v` on a parsed JSON value: a list's items, a str's characters, a dict's keys; else Python's TypeError. */
export function pyIter(v: unknown): unknown[] {
  if (Array.isArray(v)) return v;
  if (typeof v === 'string') return Array.from(v);
  if (v !== null && typeof v === 'object' && !(v instanceof PyFloat)) return v instanceof Map ? [...v.keys()] : Object.keys(v);
  throw new ToolError(`'${pyTypeName(v)}' object is not iterable`);
}

/** Python `len(v)`. */
export function pyLen(v: unknown): number {
  if (Array.isArray(v)) return v.length;
  if (typeof v === 'string') return Array.from(v).length;
  if (v !== null && typeof v === 'object' && !(v instanceof PyFloat)) return v instanceof Map ? v.size : Object.keys(v).length;
  throw new ToolError(`object of type '${pyTypeName(v)}' has no len()`);
}

/** Python `v.lower()`: only str has it. */
export function pyLower(v: unknown): string {
  if (typeof v !== 'string') throw new ToolError(`'${pyTypeName(v)}' object has no attribute 'lower'`);
  return v.toLowerCase();
}

/**
 * `seq.count(x)` where `seq` is the raw argument: substring count on a str, equality count on a list (strings are the
 * only values that can equal an item id, so other values count by identity of type and JSON text).
 */
export function pyCount(seq: unknown, x: unknown): number {
  if (typeof seq === 'string') {
    if (typeof x !== 'string') throw new ToolError(`must be str, not ${pyTypeName(x)}`);
    if (x === '') return Array.from(seq).length + 1;
    let n = 0;
    for (let at = seq.indexOf(x); at !== -1; at = seq.indexOf(x, at + x.length)) n++;
    return n;
  }
  if (Array.isArray(seq)) {
    let n = 0;
    for (const y of seq) if (pyEquals(x, y)) n++;
    return n;
  }
  throw new ToolError(`'${pyTypeName(seq)}' object has no attribute 'count'`);
}

/** Python `==` on parsed JSON values (bool and int compare equal as in Python: `True == 1`). */
export function pyEquals(a: unknown, b: unknown): boolean {
  const num = (v: unknown): number | undefined =>
    typeof v === 'number' ? v : typeof v === 'boolean' ? Number(v) : v instanceof PyFloat ? v.value : typeof v === 'bigint' ? Number(v) : undefined;
  const na = num(a);
  const nb = num(b);
  if (na !== undefined || nb !== undefined) return na === nb;
  if (a === null || typeof a !== 'object' || b === null || typeof b !== 'object') return a === b;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => pyEquals(x, b[i]));
  const ea = Object.entries(a as object);
  const ob = b as Record<string, unknown>;
  return ea.length === Object.keys(ob).length && ea.every(([k, x]) => Object.hasOwn(ob, k) && pyEquals(x, ob[k]));
}

/** Python `sorted(v)` where every element is a str (the only case that reaches it in the retail tools). */
export function pySortedStrings(items: readonly unknown[]): string[] {
  const out = items.map((x) => {
    if (typeof x !== 'string') throw new ToolError(`'<' not supported between instances of '${pyTypeName(x)}' and 'str'`);
    return x;
  });
  return out.sort(compareCodePoints);
}

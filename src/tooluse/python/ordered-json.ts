/**
 * A JSON parser that keeps object key order: every object becomes a `Map`. `JSON.parse` cannot be used for the DB
 * because JS objects enumerate integer-like keys (e.g. the item id "1002370030") first, in numeric order, while Python
 * dicts keep file order. The input must already be known-valid JSON (check it with `JSON.parse` first for a good
 * error message); this parser only re-reads it.
 */

import { PyFloat } from './pyvalue.ts';

export type OrderedJson = null | boolean | number | string | OrderedJson[] | Map<string, OrderedJson>;

interface ParseMode {
  /** `map`: objects become Maps (file order kept); `plain`: ordinary objects. */
  objects: 'map' | 'plain';
  /** `js`: every number a JS number; `python`: as Python's json.loads types them (PyFloat, or bigint beyond 2^53). */
  numbers: 'js' | 'python';
}

export function parseOrderedJson(text: string): OrderedJson {
  return parseJsonText(text, { objects: 'map', numbers: 'js' }) as OrderedJson;
}

/**
 * Parses tool-call arguments the way Python's `json.loads` types them: `1.0` and `1e3` become `PyFloat` (so error
 * messages can say `float` / `1.0`), integers beyond 2^53 stay exact as bigint; objects are plain objects.
 */
export function parsePythonJson(text: string): unknown {
  JSON.parse(text); // validate with the engine's error message first
  return parseJsonText(text, { objects: 'plain', numbers: 'python' });
}

function parseJsonText(text: string, mode: ParseMode): unknown {
  let i = 0;
  const n = text.length;

  const skipWs = (): void => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else break;
    }
  };

  const fail = (what: string): never => {
    throw new SyntaxError(`${what} at position ${i}`);
  };

  const parseString = (): string => {
    // text[i] is the opening quote
    const start = i + 1;
    let j = start;
    while (j < n) {
      const c = text.charCodeAt(j);
      if (c === 0x22) {
        i = j + 1;
        return text.slice(start, j);
      }
      if (c === 0x5c) break;
      j++;
    }
    // Escapes present: let JSON.parse decode this one string literal.
    let k = j;
    while (k < n) {
      const c = text.charCodeAt(k);
      if (c === 0x5c) k += 2;
      else if (c === 0x22) break;
      else k++;
    }
    if (k >= n) fail('Unterminated string');
    const s = JSON.parse(text.slice(i, k + 1)) as string;
    i = k + 1;
    return s;
  };

  const parseValue = (): unknown => {
    skipWs();
    const c = text.charCodeAt(i);
    if (c === 0x7b) {
      i++;
      const map = new Map<string, unknown>();
      const obj: Record<string, unknown> = {};
      const result = mode.objects === 'map' ? map : obj;
      skipWs();
      if (text.charCodeAt(i) === 0x7d) {
        i++;
        return result;
      }
      for (;;) {
        skipWs();
        if (text.charCodeAt(i) !== 0x22) fail('Expected a string key');
        const key = parseString();
        skipWs();
        if (text.charCodeAt(i) !== 0x3a) fail("Expected ':'");
        i++;
        const value = parseValue();
        if (mode.objects === 'map') map.set(key, value);
        else Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
        skipWs();
        const d = text.charCodeAt(i++);
        if (d === 0x7d) return result;
        if (d !== 0x2c) fail("Expected ',' or '}'");
      }
    }
    if (c === 0x5b) {
      i++;
      const arr: unknown[] = [];
      skipWs();
      if (text.charCodeAt(i) === 0x5d) {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(parseValue());
        skipWs();
        const d = text.charCodeAt(i++);
        if (d === 0x5d) return arr;
        if (d !== 0x2c) fail("Expected ',' or ']'");
      }
    }
    if (c === 0x22) return parseString();
    if (text.startsWith('true', i)) {
      i += 4;
      return true;
    }
    if (text.startsWith('false', i)) {
      i += 5;
      return false;
    }
    if (text.startsWith('null', i)) {
      i += 4;
      return null;
    }
    const start = i;
    while (i < n) {
      const d = text.charCodeAt(i);
      // digits, '+', '-', '.', 'e', 'E'
      if ((d >= 0x30 && d <= 0x39) || d === 0x2b || d === 0x2d || d === 0x2e || d === 0x65 || d === 0x45) i++;
      else break;
    }
    if (i === start) fail('Unexpected character');
    const literal = text.slice(start, i);
    const num = Number(literal);
    if (Number.isNaN(num)) fail('Invalid number');
    if (mode.numbers === 'python') {
      if (/[.eE]/.test(literal)) return new PyFloat(num);
      if (!Number.isSafeInteger(num)) return BigInt(literal);
    }
    return num;
  };

  const value = parseValue();
  skipWs();
  if (i !== n) fail('Unexpected data after JSON value');
  return value;
}

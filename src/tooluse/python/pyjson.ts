/**
 * Python-compatible number formatting and `json.dumps`, so that tool outputs and DB hashes match τ²-bench byte for byte.
 *
 * Value mapping (JS → Python):
 * - `Map` → dict (insertion order), plain object → dict (own-key order), array → list;
 * - `number` → float (`floats: 'all'`, the retail DB: every number there is a Python float) or, with
 *   `floats: 'non-integers'`, integral numbers → int and the rest → float;
 * - `bigint` → int (always), string → str, boolean → bool, `null` → None.
 */

export interface DumpsOptions {
  /** `json.dumps(..., sort_keys=True)`. */
  sortKeys?: boolean;
  /** How JS numbers are typed: every one a float (default) or integral ones as ints. */
  floats?: 'all' | 'non-integers';
}

/** Python `repr(float)` (= `str(float)`): shortest round-trip digits, `.0` on whole numbers, exponent for |x|<1e-4 or ≥1e16. */
export function pyFloatRepr(x: number): string {
  if (x !== x) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const ax = x < 0 ? -x : x;
  if (ax >= 1e-4 && ax < 1e16) {
    // In this range JS String() also writes plain decimal notation with the shortest round-trip digits.
    const s = String(x);
    return Number.isInteger(x) ? s + '.0' : s;
  }
  // Shortest round-trip digits in scientific form, e.g. "1.5e+300" or "5e-5".
  const e = x.toExponential();
  const at = e.indexOf('e');
  const mantissa = e.slice(0, at);
  const exp = Number(e.slice(at + 1));
  const expDigits = String(Math.abs(exp)).padStart(2, '0');
  return `${mantissa}e${exp < 0 ? '-' : '+'}${expDigits}`;
}

/** Python `repr(int)` of a JS number or bigint known to be integral. */
function pyIntRepr(x: number | bigint): string {
  return typeof x === 'bigint' ? x.toString() : x.toFixed(0);
}

/**
 * Python `round(x, ndigits)` for a float: rounds the exact binary value of `x` to `ndigits` decimals, exact ties to
 * even, and returns the nearest double to that decimal. (`Math.round(x * 100) / 100` gets e.g. 1.005 and 0.125 wrong.)
 */
export function pyRound(x: number, ndigits = 0): number {
  if (!Number.isInteger(ndigits) || ndigits < 0 || ndigits > 20) throw new RangeError(`pyRound: unsupported ndigits ${ndigits}`);
  if (x !== x || x === Infinity || x === -Infinity || x === 0) return x;
  const negative = x < 0;
  const ax = negative ? -x : x;
  if (ax >= 1e21) return x; // no fractional bits at this magnitude
  let result: number;
  // An exact tie at `ndigits` decimals means ax = m / 2^(ndigits+1) with m odd (the factor 5^ndigits of
  // 2·10^ndigits has to cancel against the numerator). Scaling by a power of two is exact.
  const scaled = ax * 2 ** (ndigits + 1);
  if (Number.isInteger(scaled) && scaled % 2 === 1) {
    // ax · 10^ndigits = m · 5^ndigits / 2 exactly; pick the even neighbour.
    const twice = BigInt(scaled) * 5n ** BigInt(ndigits);
    let n = (twice - 1n) / 2n;
    if (n % 2n === 1n) n += 1n;
    result = Number(`${n}e-${ndigits}`);
  } else {
    result = Number(ax.toFixed(ndigits));
  }
  return negative ? -result : result;
}

const SAFE_STRING = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const SHORT_ESCAPES: Record<number, string> = { 0x22: '\\"', 0x5c: '\\\\', 0x0a: '\\n', 0x0d: '\\r', 0x09: '\\t', 0x08: '\\b', 0x0c: '\\f' };

/** Python `json.dumps(s)` of a string with the default `ensure_ascii=True`. */
export function pyJsonString(s: string): string {
  if (SAFE_STRING.test(s)) return '"' + s + '"';
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c <= 0x7e && c !== 0x22 && c !== 0x5c) out += s[i];
    else out += SHORT_ESCAPES[c] ?? '\\u' + c.toString(16).padStart(4, '0');
  }
  return out + '"';
}

/** Python float in `json.dumps`: repr, except for the non-finite values. */
function pyJsonFloat(x: number): string {
  if (x !== x) return 'NaN';
  if (x === Infinity) return 'Infinity';
  if (x === -Infinity) return '-Infinity';
  return pyFloatRepr(x);
}

/** Code-point order, as Python compares strings (differs from JS `<` only for astral characters). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) {
      const xs = x >= 0xd800 && x <= 0xdfff;
      const ys = y >= 0xd800 && y <= 0xdfff;
      if (xs !== ys) return xs ? 1 : -1; // a surrogate half stands for a code point above every BMP character
      return x - y;
    }
  }
  return a.length - b.length;
}

/**
 * Python `json.dumps(value, sort_keys=...)` with the default separators `", "` and `": "` and `ensure_ascii=True`.
 * Dict keys must be strings. Throws a TypeError for values JSON cannot hold (undefined, functions, symbols).
 */
export function pyJsonDumps(value: unknown, options: DumpsOptions = {}): string {
  const sortKeys = options.sortKeys ?? false;
  const allFloats = (options.floats ?? 'all') === 'all';
  const dump = (v: unknown): string => {
    if (v === null) return 'null';
    switch (typeof v) {
      case 'string':
        return pyJsonString(v);
      case 'number':
        return allFloats || !Number.isInteger(v) ? pyJsonFloat(v) : pyIntRepr(v);
      case 'bigint':
        return pyIntRepr(v);
      case 'boolean':
        return v ? 'true' : 'false';
      case 'object': {
        if (Array.isArray(v)) {
          if (v.length === 0) return '[]';
          let out = '[' + dump(v[0]);
          for (let i = 1; i < v.length; i++) out += ', ' + dump(v[i]);
          return out + ']';
        }
        const entries: [string, unknown][] = v instanceof Map ? [...v.entries()] : Object.entries(v);
        if (entries.length === 0) return '{}';
        if (sortKeys) entries.sort((a, b) => compareCodePoints(a[0], b[0]));
        let out = '{';
        for (let i = 0; i < entries.length; i++) {
          const [k, item] = entries[i];
          if (typeof k !== 'string') throw new TypeError(`keys must be str, not ${typeof k}`);
          out += (i === 0 ? '' : ', ') + pyJsonString(k) + ': ' + dump(item);
        }
        return out + '}';
      }
      default:
        throw new TypeError(`Object of type ${typeof v} is not JSON serializable`);
    }
  };
  return dump(value);
}

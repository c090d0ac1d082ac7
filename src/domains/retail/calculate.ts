/**
 * The `calculate` tool's arithmetic: what τ² gets from `str(round(float(eval(expression)), 2))` on an expression made
 * only of `0123456789+-*\/(). `, reproduced with a parser and Python number semantics (never `eval`).
 *
 * - ints are arbitrary precision (bigint); `/` is true division to float (correctly rounded, also for huge ints);
 *   `//` floors (int or float); `**` is right-associative and binds tighter than a unary minus on its left
 *   (`-2**2` = -4), and an int to a negative int power gives a float;
 * - `()` is the empty tuple, `...` is Ellipsis, `x(y)` is a call: they exist only to fail the way Python does;
 * - a negative float to a fractional power is complex in Python; complex values are tracked only as "complex".
 *
 * Error texts are CPython's (identical in 3.10–3.13): `division by zero` (int / int), `float division by zero`,
 * `integer division or modulo by zero` (int // int), `float floor division by zero`,
 * `0.0 cannot be raised to a negative power`, `int too large to convert to float`,
 * `integer division result too large for a float`, `(34, 'Numerical result out of range')` (float power overflow),
 * and SyntaxErrors as `invalid syntax (<string>, line 1)` (line 0 for an empty expression), `unmatched ')'`,
 * `'(' was never closed`, `invalid syntax. Perhaps you forgot a comma?` and the leading-zeros message.
 */
import { bitLength, exactPowInt, nearestPow, ratioToDouble } from './bigfloat.ts';
import { pyFloatRepr, pyRound } from './pyjson.ts';

/** An error Python would raise; `message` is `str(exception)`. */
export class PyError extends Error {
  constructor(
    readonly pyType: string,
    message: string,
  ) {
    super(message);
    this.name = 'PyError';
  }
}

type Value =
  | { t: 'int'; v: bigint }
  | { t: 'float'; v: number }
  | { t: 'tuple' }
  | { t: 'complex' }
  | { t: 'ellipsis' };

type Token =
  | { kind: 'num'; text: string; isFloat: boolean; level: number }
  | { kind: 'op'; text: string; level: number }
  | { kind: 'ellipsis'; level: number }
  | { kind: 'dot'; level: number }
  | { kind: 'end'; level: number };

type Node =
  | { k: 'num'; value: Value }
  | { k: 'tuple' }
  | { k: 'ellipsis' }
  | { k: 'unary'; op: '+' | '-'; x: Node }
  | { k: 'bin'; op: string; a: Node; b: Node }
  | { k: 'call'; f: Node; arg: Node | null; star: '' | '*' | '**' };

const ALLOWED = new Set('0123456789+-*/(). ');
const LEADING_ZEROS = 'leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers';
/** Refuse integer powers whose result would exceed this many bits (Python would grind on; nothing useful comes out). */
const MAX_INT_BITS = 4_000_000;

const syntaxError = (msg: string, line = 1): PyError => new PyError('SyntaxError', `${msg} (<string>, line ${line})`);

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let level = 0;
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === ' ') {
      i++;
    } else if (isDigit(c) || (c === '.' && isDigit(src[i + 1]))) {
      const start = i;
      while (isDigit(src[i])) i++;
      let isFloat = false;
      if (src[i] === '.') {
        isFloat = true;
        i++;
        while (isDigit(src[i])) i++;
      }
      const text = src.slice(start, i);
      if (!isFloat && text.length > 1 && text[0] === '0' && /[1-9]/.test(text)) throw syntaxError(LEADING_ZEROS);
      tokens.push({ kind: 'num', text, isFloat, level });
    } else if (c === '.') {
      if (src.startsWith('...', i)) {
        tokens.push({ kind: 'ellipsis', level });
        i += 3;
      } else {
        tokens.push({ kind: 'dot', level });
        i++;
      }
    } else if (c === '*' || c === '/') {
      const op = src[i + 1] === c ? c + c : c;
      tokens.push({ kind: 'op', text: op, level });
      i += op.length;
    } else if (c === '(') {
      level++;
      tokens.push({ kind: 'op', text: c, level });
      i++;
    } else if (c === ')') {
      if (level === 0) throw syntaxError("unmatched ')'");
      level--;
      tokens.push({ kind: 'op', text: c, level });
      i++;
    } else {
      tokens.push({ kind: 'op', text: c, level }); // + or -
      i++;
    }
  }
  tokens.push({ kind: 'end', level });
  return tokens;
}

type FailureKind = 'invalid' | 'comma' | 'starred' | 'double-starred';

class ParseFailure extends Error {
  constructor(
    readonly kind: FailureKind,
    /** Index of the furthest token the parser looked at (CPython reports "'(' was never closed" if that is EOF). */
    readonly furthest: number,
  ) {
    super('parse failure');
  }
}

/**
 * Recursive descent over Python's expression grammar restricted to these tokens. Failures carry what CPython's
 * error pass would say: juxtaposed expressions inside parentheses ("forgot a comma"), `(*x)` / `(**x)` groups, or
 * plain invalid syntax; and how far the parser looked ahead.
 */
function parse(tokens: Token[], from = 0, withInvalidRules = true): { node: Node; end: number; furthest: number } {
  let pos = from;
  let furthest = from;
  const peek = (): Token => {
    if (pos > furthest) furthest = pos;
    return tokens[pos];
  };
  const isOp = (t: Token, text: string): boolean => t.kind === 'op' && t.text === text;
  const startsAtom = (t: Token): boolean => t.kind === 'num' || t.kind === 'ellipsis';
  const fail = (kind: FailureKind): never => {
    throw new ParseFailure(kind, furthest);
  };
  // After a complete expression, a number or `...` is a second expression juxtaposed to the first. CPython's error
  // pass parses that second expression (looking further ahead) and, inside parentheses, suggests a missing comma.
  const failAfterExpression = (): never => {
    const t = peek();
    if (withInvalidRules && startsAtom(t)) {
      try {
        furthest = Math.max(furthest, parse(tokens, pos, false).furthest);
      } catch (err) {
        if (!(err instanceof ParseFailure)) throw err;
        furthest = Math.max(furthest, err.furthest);
      }
      fail(t.level > 0 ? 'comma' : 'invalid');
    }
    return fail('invalid');
  };

  const expr = (): Node => {
    let a = term();
    while (isOp(peek(), '+') || isOp(peek(), '-')) {
      const op = (tokens[pos++] as { text: string }).text;
      a = { k: 'bin', op, a, b: term() };
    }
    return a;
  };
  const term = (): Node => {
    let a = factor();
    while (isOp(peek(), '*') || isOp(peek(), '/') || isOp(peek(), '//')) {
      const op = (tokens[pos++] as { text: string }).text;
      a = { k: 'bin', op, a, b: factor() };
    }
    return a;
  };
  const factor = (): Node => {
    if (isOp(peek(), '+') || isOp(peek(), '-')) {
      const op = (tokens[pos++] as { text: string }).text as '+' | '-';
      return { k: 'unary', op, x: factor() };
    }
    return power();
  };
  const power = (): Node => {
    const a = primary();
    if (isOp(peek(), '**')) {
      pos++;
      return { k: 'bin', op: '**', a, b: factor() };
    }
    return a;
  };
  const closeParen = (): void => {
    if (isOp(peek(), ')')) pos++;
    else failAfterExpression();
  };
  const primary = (): Node => {
    let node = atom();
    while (isOp(peek(), '(')) {
      pos++;
      if (isOp(peek(), ')')) {
        pos++;
        node = { k: 'call', f: node, arg: null, star: '' };
        continue;
      }
      let star: '' | '*' | '**' = '';
      const t = peek();
      if (isOp(t, '*') || isOp(t, '**')) {
        star = (t as { text: '*' | '**' }).text;
        pos++;
      }
      const arg = expr();
      closeParen();
      node = { k: 'call', f: node, arg, star };
    }
    return node;
  };
  const atom = (): Node => {
    const t = peek();
    if (t.kind === 'num') {
      pos++;
      const value: Value = t.isFloat ? { t: 'float', v: Number(t.text) } : { t: 'int', v: BigInt(t.text) };
      return { k: 'num', value };
    }
    if (t.kind === 'ellipsis') {
      pos++;
      return { k: 'ellipsis' };
    }
    if (isOp(t, '(')) {
      pos++;
      if (isOp(peek(), ')')) {
        pos++;
        return { k: 'tuple' };
      }
      const s = peek();
      if (isOp(s, '*') || isOp(s, '**')) {
        // `(*x)` / `(**x)`: valid only as call arguments; CPython names the problem once the group is complete.
        pos++;
        expr();
        if (isOp(peek(), ')')) fail(isOp(s, '*') ? 'starred' : 'double-starred');
        failAfterExpression();
      }
      const inner = expr();
      closeParen();
      return inner;
    }
    return fail('invalid');
  };

  const node = expr();
  if (from === 0 && peek().kind !== 'end') failAfterExpression();
  return { node, end: pos, furthest };
}

// ---- evaluation ---------------------------------------------------------------------------------------------------

const typeName = (x: Value): string => x.t;

/** Python `str()` of a value, as it appears in the star-argument messages. */
function pyStrOf(x: Value): string {
  switch (x.t) {
    case 'int':
      return x.v.toString();
    case 'float':
      return pyFloatRepr(x.v);
    case 'tuple':
      return '()';
    case 'ellipsis':
      return 'Ellipsis';
    case 'complex':
      return 'complex';
  }
}

const FAILURE_MESSAGES: Record<FailureKind, string> = {
  invalid: 'invalid syntax',
  comma: 'invalid syntax. Perhaps you forgot a comma?',
  starred: 'cannot use starred expression here',
  'double-starred': 'cannot use double starred expression here',
};

function intToFloat(v: bigint): number {
  const f = Number(v);
  if (!Number.isFinite(f)) throw new PyError('OverflowError', 'int too large to convert to float');
  return f;
}

function toFloat(x: Value): number {
  if (x.t === 'int') return intToFloat(x.v);
  if (x.t === 'float') return x.v;
  throw new Error('toFloat on a non-number');
}

const isNumber = (x: Value): x is { t: 'int'; v: bigint } | { t: 'float'; v: number } => x.t === 'int' || x.t === 'float';

/** Correctly rounded a / b for ints (Python's int true division). */
function intTrueDiv(a: bigint, b: bigint): number {
  if (b === 0n) throw new PyError('ZeroDivisionError', 'division by zero');
  const LIMIT = 2n ** 53n;
  const absA = a < 0n ? -a : a;
  const absB = b < 0n ? -b : b;
  if (absA <= LIMIT && absB <= LIMIT) return Number(a) / Number(b); // both exact: one IEEE rounding
  const result = ratioToDouble(absA, absB, 0);
  if (!Number.isFinite(result)) throw new PyError('OverflowError', 'integer division result too large for a float');
  return a < 0n !== b < 0n ? -result : result;
}

function floatFloorDiv(vx: number, wx: number): number {
  if (wx === 0) throw new PyError('ZeroDivisionError', 'float floor division by zero');
  // CPython float_floor_div (via _float_div_mod)
  const mod = vx % wx;
  let div = (vx - mod) / wx;
  if (mod !== 0 && wx < 0 !== mod < 0) div -= 1.0; // the remainder takes the divisor's sign
  let floordiv: number;
  if (div !== 0) {
    floordiv = Math.floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  } else {
    const q = vx / wx; // copysign(0.0, vx / wx)
    floordiv = q < 0 || Object.is(q, -0) ? -0 : 0;
  }
  return floordiv;
}

function floatPow(iv: number, iw: number): Value {
  // CPython float_pow's special cases (C99 pow semantics; V8 differs for 1 ** nan and (-1) ** ±inf).
  if (iw === 0 || iv === 1) return { t: 'float', v: 1.0 };
  if (Number.isNaN(iv)) return { t: 'float', v: iv };
  if (Number.isNaN(iw)) return { t: 'float', v: iw };
  if (iv === -1 && !Number.isFinite(iw)) return { t: 'float', v: 1.0 };
  if (iv === 0) {
    if (iw < 0) throw new PyError('ZeroDivisionError', '0.0 cannot be raised to a negative power');
    return { t: 'float', v: Math.pow(iv, iw) };
  }
  if (iv < 0 && Number.isFinite(iv) && Number.isFinite(iw) && !Number.isInteger(iw)) return { t: 'complex' };
  const r = Number.isInteger(iw) && Math.abs(iw) <= 2048 && Number.isFinite(iv) ? exactPowInt(iv, iw) : nearestPow(iv, iw);
  if (!Number.isFinite(r) && Number.isFinite(iv) && Number.isFinite(iw)) {
    throw new PyError('OverflowError', "(34, 'Numerical result out of range')");
  }
  return { t: 'float', v: r };
}

function unsupported(op: string, a: Value, b: Value): PyError {
  const shown = op === '**' ? '** or pow()' : op;
  return new PyError('TypeError', `unsupported operand type(s) for ${shown}: '${typeName(a)}' and '${typeName(b)}'`);
}

function binary(op: string, a: Value, b: Value): Value {
  // Sequences (the empty tuple) first: + concatenates, * repeats by an int.
  if (a.t === 'tuple' || b.t === 'tuple') {
    if (op === '+' && a.t === 'tuple') {
      if (b.t === 'tuple') return a;
      throw new PyError('TypeError', `can only concatenate tuple (not "${typeName(b)}") to tuple`);
    }
    if (op === '*') {
      const other = a.t === 'tuple' ? b : a;
      if (other.t === 'int') {
        if (other.v >= 2n ** 63n || other.v < -(2n ** 63n)) {
          throw new PyError('OverflowError', "cannot fit 'int' into an index-sized integer");
        }
        return { t: 'tuple' };
      }
      throw new PyError('TypeError', `can't multiply sequence by non-int of type '${typeName(other)}'`);
    }
    throw unsupported(op, a, b);
  }
  if (a.t === 'ellipsis' || b.t === 'ellipsis') throw unsupported(op, a, b);
  if (a.t === 'complex' || b.t === 'complex') {
    if (op === '//') throw unsupported(op, a, b);
    if (op === '/' && isNumber(b) && (b.t === 'int' ? b.v === 0n : b.v === 0)) {
      throw new PyError('ZeroDivisionError', 'complex division by zero');
    }
    return { t: 'complex' };
  }
  if (a.t === 'int' && b.t === 'int') {
    switch (op) {
      case '+':
        return { t: 'int', v: a.v + b.v };
      case '-':
        return { t: 'int', v: a.v - b.v };
      case '*':
        if (bitLength(a.v) + bitLength(b.v) > MAX_INT_BITS) throw tooBig();
        return { t: 'int', v: a.v * b.v };
      case '/':
        return { t: 'float', v: intTrueDiv(a.v, b.v) };
      case '//': {
        if (b.v === 0n) throw new PyError('ZeroDivisionError', 'integer division or modulo by zero');
        let q = a.v / b.v;
        if (q * b.v !== a.v && a.v < 0n !== b.v < 0n) q -= 1n;
        return { t: 'int', v: q };
      }
      case '**': {
        if (b.v < 0n) return floatPow(intToFloat(a.v), intToFloat(b.v));
        const base = a.v < 0n ? -a.v : a.v;
        if (base > 1n && (bitLength(a.v) - 1) * Number(b.v) > MAX_INT_BITS) throw tooBig();
        return { t: 'int', v: a.v ** b.v };
      }
    }
  }
  const x = toFloat(a as Value);
  const y = toFloat(b as Value);
  switch (op) {
    case '+':
      return { t: 'float', v: x + y };
    case '-':
      return { t: 'float', v: x - y };
    case '*':
      return { t: 'float', v: x * y };
    case '/':
      if (y === 0) throw new PyError('ZeroDivisionError', 'float division by zero');
      return { t: 'float', v: x / y };
    case '//':
      return { t: 'float', v: floatFloorDiv(x, y) };
    case '**':
      return floatPow(x, y);
  }
  throw new Error(`unknown operator ${op}`);
}

function tooBig(): PyError {
  return new PyError('OverflowError', `integer result too large to compute (over ${MAX_INT_BITS} bits)`);
}

function evaluate(node: Node): Value {
  switch (node.k) {
    case 'num':
      return node.value;
    case 'tuple':
      return { t: 'tuple' };
    case 'ellipsis':
      return { t: 'ellipsis' };
    case 'unary': {
      const x = evaluate(node.x);
      if (x.t === 'int') return node.op === '-' ? { t: 'int', v: -x.v } : x;
      if (x.t === 'float') return node.op === '-' ? { t: 'float', v: -x.v } : x;
      if (x.t === 'complex') return x;
      throw new PyError('TypeError', `bad operand type for unary ${node.op}: '${typeName(x)}'`);
    }
    case 'bin': {
      const a = evaluate(node.a);
      const b = evaluate(node.b);
      return binary(node.op, a, b);
    }
    case 'call': {
      const f = evaluate(node.f);
      if (node.arg) {
        const arg = evaluate(node.arg);
        if (node.star === '*' && arg.t !== 'tuple') {
          throw new PyError('TypeError', `${pyStrOf(f)} argument after * must be an iterable, not ${typeName(arg)}`);
        }
        if (node.star === '**') {
          throw new PyError('TypeError', `${pyStrOf(f)} argument after ** must be a mapping, not ${typeName(arg)}`);
        }
      }
      throw new PyError('TypeError', `'${typeName(f)}' object is not callable`);
    }
  }
}

/** Checks, parses and evaluates like `str(round(float(eval(expression)), 2))`; throws `PyError` with Python's text. */
export function pythonCalculate(expression: string): string {
  for (const ch of expression) {
    if (!ALLOWED.has(ch)) throw new PyError('ValueError', 'Invalid characters in expression');
  }
  // eval() strips leading spaces; an expression of nothing is a syntax error on "line 0".
  if (expression.trim() === '') throw syntaxError('invalid syntax', 0);
  const tokens = tokenize(expression);
  let tree: Node;
  try {
    tree = parse(tokens).node;
  } catch (err) {
    if (!(err instanceof ParseFailure)) throw err;
    const last = tokens[tokens.length - 1];
    if (err.furthest === tokens.length - 1 && last.level > 0) throw syntaxError("'(' was never closed");
    throw syntaxError(FAILURE_MESSAGES[err.kind]);
  }
  const value = evaluate(tree);
  if (!isNumber(value)) {
    throw new PyError('TypeError', `float() argument must be a string or a real number, not '${typeName(value)}'`);
  }
  return pyFloatRepr(pyRound(toFloat(value), 2));
}

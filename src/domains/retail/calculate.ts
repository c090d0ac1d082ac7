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
 *
 * Deep input fails as in CPython 3.11 (see PARSER_STACK: `too many nested parentheses`, MemoryError, RecursionError),
 * str() of an int over 4300 digits raises 3.11's ValueError, and nothing here recurses deeper than the parentheses
 * (at most 200). Two deliberate deviations bound the cost of one call: an int result over MAX_INT_BITS and an
 * expression whose integer work would exceed WORK_LIMIT_NS raise OverflowError where Python would compute on.
 */
import { exactPowInt, nearestPow, ratioToDouble } from '../../tooluse/python/bigfloat.ts';
import { pyFloatRepr, pyRound } from '../../tooluse/python/pyjson.ts';

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
  | { kind: 'end'; level: number }
  /** Where CPython's tokenizer fails; the stream stops there. */
  | { kind: 'error'; error: PyError; level: number };

/** Every node knows its depth `d`: the longest chain of nested nodes down to a leaf, the leaf counted. */
type Node = { d: number } & (
  | { k: 'num'; value: Value }
  | { k: 'tuple' }
  | { k: 'ellipsis' }
  | { k: 'unary'; op: '+' | '-'; x: Node }
  | { k: 'bin'; op: string; a: Node; b: Node }
  | { k: 'call'; f: Node; arg: Node | null; star: '' | '*' | '**' }
);

const ALLOWED = new Set('0123456789+-*/(). ');
const LEADING_ZEROS = 'leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers';
/** Refuse integer powers whose result would exceed this many bits (Python would grind on; nothing useful comes out). */
const MAX_INT_BITS = 4_000_000;

/**
 * CPython 3.11's limits on one expression, so that deep input fails the way it does there (and never overflows the
 * JS stack here):
 * - the tokenizer refuses a 201st open parenthesis (`too many nested parentheses`, MAXLEVEL 200);
 * - the PEG parser raises MemoryError (empty message) when its rule stack reaches MAXSTACK 6000. Along one path a
 *   unary sign costs one rule level, `**` two, a parenthesised group 28, a call's parentheses 24 (27 with `*` or `**`),
 *   on top of 24 levels of the enclosing rules, so the limit is reached at 5,976 levels of these costs. When the
 *   parse fails, CPython parses again with its error rules, which cost more (a group 30, a call 25) and reach the
 *   limit at 5,973;
 * - the compiler raises RecursionError (`maximum recursion depth exceeded during compilation`) when expression nodes
 *   nest deeper than 3 × the recursion limit (1000) less 3 per Python frame already on the stack. The limit here is
 *   the one `eval` hits when a function called from module level runs it (two frames: nodes nested 2,995 deep fail);
 *   τ²'s own call stack is deeper, which lowers its cut by 3 nodes per frame.
 * Measured with CPython 3.11.7 (`eval` as τ²'s calculate calls it).
 */
const MAX_PAREN_LEVEL = 200;
const PARSER_STACK = { first: 5976, second: 5973, tokenSlack: 5 } as const;
const PARSER_COST = {
  unary: [1, 1],
  power: [2, 2],
  group: [28, 30],
  call: [24, 25],
  starCall: [27, 27],
  starGroup: [22, 22],
  doubleStarGroup: [27, 27],
} as const satisfies Record<string, readonly [number, number]>;
const COMPILE_DEPTH_LIMIT = 3 * 1000 - 3 * 2;
/** Python 3.11's `sys.get_int_max_str_digits()` default: str() of a longer int raises ValueError. */
const INT_MAX_STR_DIGITS = 4300;

const syntaxError = (msg: string, line = 1): PyError => new PyError('SyntaxError', `${msg} (<string>, line ${line})`);

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

/**
 * The token stream. CPython's tokenizer runs as the parser asks for tokens, so its errors (`unmatched ')'`, too many
 * parentheses, leading zeros) become an `error` token where they occur: the parser raises it when it gets there, and a
 * parse that fails earlier reports it too (CPython checks the whole source for tokenizer errors before reporting a
 * syntax error), but a parser stack overflow before it wins.
 */
function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let level = 0;
  let i = 0;
  const stop = (error: PyError): Token[] => {
    tokens.push({ kind: 'error', error, level });
    return tokens;
  };
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
      if (!isFloat && text.length > 1 && text[0] === '0' && /[1-9]/.test(text)) return stop(syntaxError(LEADING_ZEROS));
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
      if (level >= MAX_PAREN_LEVEL) return stop(syntaxError('too many nested parentheses'));
      level++;
      tokens.push({ kind: 'op', text: c, level });
      i++;
    } else if (c === ')') {
      if (level === 0) return stop(syntaxError("unmatched ')'"));
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
    /** The deepest parser stack CPython's second (error-rule) pass would reach on the same input. */
    readonly secondPassLevel: number,
  ) {
    super('parse failure');
  }
}

/** Parser stack levels along the current path: [first pass, second pass]. */
interface Levels { first: number; second: number; maxSecond: number }

const memoryError = (): PyError => new PyError('MemoryError', '');

/**
 * Recursive descent over Python's expression grammar restricted to these tokens. Failures carry what CPython's
 * error pass would say: juxtaposed expressions inside parentheses ("forgot a comma"), `(*x)` / `(**x)` groups, or
 * plain invalid syntax; and how far the parser looked ahead. Chains of signs and of `**` are parsed by loops, so the
 * JS stack grows only with parentheses (at most 200 deep).
 */
function parse(tokens: Token[], from = 0, withInvalidRules = true, outer?: Levels): { node: Node; end: number; furthest: number; secondPassLevel: number } {
  let pos = from;
  let furthest = from;
  const levels: Levels = outer ? { ...outer } : { first: 0, second: 0, maxSecond: 0 };
  // CPython's first pass dies when its stack reaches the limit, which for an operand happens below the token (at
  // 5,976 levels of the costs above) and for a token that is a tokenizer error a few levels above it; an unclosed
  // parenthesis at the end of the input is a tokenizer error of the first pass too.
  const peek = (): Token => {
    if (pos > furthest) furthest = pos;
    const t = tokens[pos];
    if (t.kind === 'error' || (t.kind === 'end' && t.level > 0 && withInvalidRules)) {
      if (withInvalidRules && levels.first >= PARSER_STACK.first + (t.kind === 'error' ? PARSER_STACK.tokenSlack : 0)) throw memoryError();
      throw t.kind === 'error' ? t.error : syntaxError("'(' was never closed");
    }
    return t;
  };
  const checkStack = (): void => {
    if (withInvalidRules && levels.first >= PARSER_STACK.first) throw memoryError();
  };
  const enter = ([first, second]: readonly [number, number]): void => {
    levels.first += first;
    levels.second += second;
    if (levels.second > levels.maxSecond) levels.maxSecond = levels.second;
  };
  const leave = ([first, second]: readonly [number, number], times = 1): void => {
    levels.first -= first * times;
    levels.second -= second * times;
  };
  const isOp = (t: Token, text: string): boolean => t.kind === 'op' && t.text === text;
  const startsAtom = (t: Token): boolean => t.kind === 'num' || t.kind === 'ellipsis';
  const fail = (kind: FailureKind): never => {
    throw new ParseFailure(kind, furthest, levels.maxSecond);
  };
  // After a complete expression, a number or `...` is a second expression juxtaposed to the first. CPython's error
  // pass parses that second expression (looking further ahead) and, inside parentheses, suggests a missing comma.
  const failAfterExpression = (): never => {
    const t = peek();
    if (withInvalidRules && startsAtom(t)) {
      try {
        const ahead = parse(tokens, pos, false, levels);
        furthest = Math.max(furthest, ahead.furthest);
        levels.maxSecond = Math.max(levels.maxSecond, ahead.secondPassLevel);
      } catch (err) {
        if (!(err instanceof ParseFailure)) throw err;
        furthest = Math.max(furthest, err.furthest);
        levels.maxSecond = Math.max(levels.maxSecond, err.secondPassLevel);
      }
      fail(t.level > 0 ? 'comma' : 'invalid');
    }
    return fail('invalid');
  };
  const bin = (op: string, a: Node, b: Node): Node => ({ k: 'bin', op, a, b, d: 1 + Math.max(a.d, b.d) });
  const wrapUnary = (signs: ('+' | '-')[], x: Node): Node => {
    let node = x;
    for (let i = signs.length - 1; i >= 0; i--) node = { k: 'unary', op: signs[i], x: node, d: node.d + 1 };
    return node;
  };
  /** Leading signs of a factor (each one rule level deeper). */
  const signs = (): ('+' | '-')[] => {
    const out: ('+' | '-')[] = [];
    while (isOp(peek(), '+') || isOp(peek(), '-')) {
      out.push((tokens[pos++] as { text: '+' | '-' }).text);
      enter(PARSER_COST.unary);
    }
    return out;
  };

  const expr = (): Node => {
    let a = term();
    while (isOp(peek(), '+') || isOp(peek(), '-')) {
      const op = (tokens[pos++] as { text: string }).text;
      a = bin(op, a, term());
    }
    return a;
  };
  const term = (): Node => {
    let a = factor();
    while (isOp(peek(), '*') || isOp(peek(), '/') || isOp(peek(), '//')) {
      const op = (tokens[pos++] as { text: string }).text;
      a = bin(op, a, factor());
    }
    return a;
  };
  // factor: ('+' | '-')* power;  power: primary ['**' factor]. A chain p0 ** s1 p1 ** s2 p2 … is read left to right
  // and folded from the right: p0 ** (s1 (p1 ** (s2 (p2 …)))).
  const factor = (): Node => {
    const first = signs();
    const operands: { signs: ('+' | '-')[]; base: Node }[] = [{ signs: first, base: primary() }];
    while (isOp(peek(), '**')) {
      pos++;
      enter(PARSER_COST.power);
      const s = signs();
      operands.push({ signs: s, base: primary() });
    }
    let acc: Node | null = null;
    for (let i = operands.length - 1; i >= 0; i--) {
      const o = operands[i];
      const powered: Node = acc === null ? o.base : bin('**', o.base, acc);
      acc = wrapUnary(o.signs, powered);
      leave(PARSER_COST.unary, o.signs.length);
      if (i > 0) leave(PARSER_COST.power);
    }
    return acc!;
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
        node = { k: 'call', f: node, arg: null, star: '', d: node.d + 1 };
        continue;
      }
      let star: '' | '*' | '**' = '';
      const t = peek();
      if (isOp(t, '*') || isOp(t, '**')) {
        star = (t as { text: '*' | '**' }).text;
        pos++;
      }
      const cost = star ? PARSER_COST.starCall : PARSER_COST.call;
      enter(cost);
      const arg = expr();
      closeParen();
      leave(cost);
      // A starred argument is a Starred node around the value.
      node = { k: 'call', f: node, arg, star, d: 1 + Math.max(node.d, arg.d + (star ? 1 : 0)) };
    }
    return node;
  };
  const atom = (): Node => {
    const t = peek();
    if (t.kind === 'num' || t.kind === 'ellipsis' || isOp(t, '(')) checkStack();
    if (t.kind === 'num') {
      pos++;
      const value: Value = t.isFloat ? { t: 'float', v: Number(t.text) } : { t: 'int', v: BigInt(t.text) };
      return { k: 'num', value, d: 1 };
    }
    if (t.kind === 'ellipsis') {
      pos++;
      return { k: 'ellipsis', d: 1 };
    }
    if (isOp(t, '(')) {
      pos++;
      if (isOp(peek(), ')')) {
        pos++;
        return { k: 'tuple', d: 1 };
      }
      const s = peek();
      if (isOp(s, '*') || isOp(s, '**')) {
        // `(*x)` / `(**x)`: valid only as call arguments; CPython names the problem once the group is complete.
        pos++;
        enter(isOp(s, '*') ? PARSER_COST.starGroup : PARSER_COST.doubleStarGroup);
        expr();
        if (isOp(peek(), ')')) fail(isOp(s, '*') ? 'starred' : 'double-starred');
        failAfterExpression();
      }
      enter(PARSER_COST.group);
      const inner = expr();
      closeParen();
      leave(PARSER_COST.group);
      return inner;
    }
    return fail('invalid');
  };

  const node = expr();
  if (from === 0 && peek().kind !== 'end') failAfterExpression();
  return { node, end: pos, furthest, secondPassLevel: levels.maxSecond };
}

// ---- evaluation ---------------------------------------------------------------------------------------------------

const typeName = (x: Value): string => x.t;

/** |v| in bits (0 for 0), from the hex digits (a quarter of the string `toString(2)` would build). */
function bits(v: bigint): number {
  if (v === 0n) return 0;
  const hex = (v < 0n ? -v : v).toString(16);
  return 4 * (hex.length - 1) + (32 - Math.clz32(parseInt(hex[0], 16)));
}

/**
 * A bound on the integer work of one expression. CPython would compute any power or product it is given; here one
 * tool call must not keep the process busy for long (the env server runs every session on one thread), so each
 * bigint operation is charged its cost estimated from the operand sizes (nanoseconds on a 2-core EPYC, V8's
 * sub-quadratic multiplication and division) and an expression that would spend more than WORK_LIMIT_NS fails with
 * an OverflowError instead. Ordinary arithmetic costs nothing measurable.
 */
const WORK_LIMIT_NS = 100e6;

class Work {
  spent = 0;

  charge(ns: number): void {
    this.spent += ns;
    if (this.spent > WORK_LIMIT_NS) {
      throw new PyError('OverflowError', `integer arithmetic too expensive to compute (this expression needs more than the ${WORK_LIMIT_NS / 1e6} ms work limit of one calculate call)`);
    }
  }
}

/** 64-bit words of an int of `b` bits (at least 1). */
const words = (b: number): number => Math.max(1, Math.ceil(b / 64));
const COST = {
  linear: (b: number) => 4 * words(b),
  mul: (ba: number, bb: number) => 30 * Math.max(words(ba), words(bb)) * Math.min(words(ba), words(bb)) ** 0.3,
  /** Result of `resultBits` by repeated squaring. */
  pow: (resultBits: number) => 35 * words(resultBits) ** 1.3,
  /** Quotient of `qb` bits by a divisor of `db` bits, from a dividend of `nb` bits. */
  div: (nb: number, db: number, qb: number) => 30 * words(qb) * words(db) ** 0.5 + 80 * words(nb),
};

/** Python `str()` of a value, as it appears in the star-argument messages. */
function pyStrOf(x: Value): string {
  switch (x.t) {
    case 'int': {
      // Python 3.11 refuses to convert ints of more than 4300 digits; 4300 digits need at most 14,284 bits.
      if (bits(x.v) > 14_300) throw intStrLimit();
      const text = x.v.toString();
      if (text.length - (x.v < 0n ? 1 : 0) > INT_MAX_STR_DIGITS) throw intStrLimit();
      return text;
    }
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

function intStrLimit(): PyError {
  return new PyError('ValueError', `Exceeds the limit (${INT_MAX_STR_DIGITS} digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit`);
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
function intTrueDiv(a: bigint, b: bigint, work: Work): number {
  if (b === 0n) throw new PyError('ZeroDivisionError', 'division by zero');
  const LIMIT = 2n ** 53n;
  const absA = a < 0n ? -a : a;
  const absB = b < 0n ? -b : b;
  if (absA <= LIMIT && absB <= LIMIT) return Number(a) / Number(b); // both exact: one IEEE rounding
  const ba = bits(absA), bb = bits(absB);
  // ratioToDouble shifts the dividend to leave a 55-bit quotient, then divides once.
  work.charge(COST.div(Math.max(ba, bb + 55), bb, 56));
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

/** log2 |v| for |v| > 1, accurate to ~1e-15 relative (the top 53 bits and the bit count). */
function log2Abs(v: bigint): number {
  const abs = v < 0n ? -v : v;
  const b = bits(abs);
  if (b <= 1000) return Math.log2(Number(abs));
  return (b - 53) + Math.log2(Number(abs >> BigInt(b - 53)));
}

function intBinary(op: string, a: bigint, b: bigint, work: Work): Value {
  switch (op) {
    case '+':
    case '-':
      work.charge(COST.linear(Math.max(bits(a), bits(b))));
      return { t: 'int', v: op === '+' ? a + b : a - b };
    case '*': {
      const ba = bits(a), bb = bits(b);
      if (ba + bb > MAX_INT_BITS) throw tooBig();
      work.charge(COST.mul(ba, bb));
      return { t: 'int', v: a * b };
    }
    case '/':
      return { t: 'float', v: intTrueDiv(a, b, work) };
    case '//': {
      if (b === 0n) throw new PyError('ZeroDivisionError', 'integer division or modulo by zero');
      const ba = bits(a), bb = bits(b);
      work.charge(COST.div(ba, bb, Math.max(1, ba - bb + 1)) + COST.mul(Math.max(1, ba - bb + 1), bb));
      let q = a / b;
      if (q * b !== a && a < 0n !== b < 0n) q -= 1n;
      return { t: 'int', v: q };
    }
    case '**': {
      if (b < 0n) return floatPow(intToFloat(a), intToFloat(b));
      const base = a < 0n ? -a : a;
      if (base > 1n && b > 0n) {
        // |a| ** b has about b · log2|a| bits (bitLength − 1 in place of log2|a| would undercount 3 ** n by 37 %).
        const resultBits = Number(b) * log2Abs(base);
        if (resultBits > MAX_INT_BITS) throw tooBig();
        work.charge(COST.pow(resultBits));
      }
      return { t: 'int', v: a ** b };
    }
  }
  throw new Error(`unknown operator ${op}`);
}

function binary(op: string, a: Value, b: Value, work: Work): Value {
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
  if (a.t === 'int' && b.t === 'int') return intBinary(op, a.v, b.v, work);
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

function unary(op: '+' | '-', x: Value, work: Work): Value {
  if (x.t === 'int') {
    if (op === '+') return x;
    work.charge(COST.linear(bits(x.v)));
    return { t: 'int', v: -x.v };
  }
  if (x.t === 'float') return op === '-' ? { t: 'float', v: -x.v } : x;
  if (x.t === 'complex') return x;
  throw new PyError('TypeError', `bad operand type for unary ${op}: '${typeName(x)}'`);
}

function call(node: Extract<Node, { k: 'call' }>, f: Value, arg: Value | null): never {
  if (arg !== null) {
    if (node.star === '*' && arg.t !== 'tuple') {
      throw new PyError('TypeError', `${pyStrOf(f)} argument after * must be an iterable, not ${typeName(arg)}`);
    }
    if (node.star === '**') {
      throw new PyError('TypeError', `${pyStrOf(f)} argument after ** must be a mapping, not ${typeName(arg)}`);
    }
  }
  throw new PyError('TypeError', `'${typeName(f)}' object is not callable`);
}

/**
 * Evaluates in Python's order (left operand, right operand, then the operator; a call's callee, then its argument)
 * with an explicit stack: a tree 3,000 nodes deep costs no JS stack.
 */
function evaluate(root: Node, work: Work): Value {
  const children = (n: Node): Node[] => {
    switch (n.k) {
      case 'unary': return [n.x];
      case 'bin': return [n.a, n.b];
      case 'call': return n.arg ? [n.f, n.arg] : [n.f];
      default: return [];
    }
  };
  const values: Value[] = [];
  const stack: { node: Node; expanded: boolean }[] = [{ node: root, expanded: false }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1];
    const n = top.node;
    if (!top.expanded) {
      top.expanded = true;
      const kids = children(n);
      for (let i = kids.length - 1; i >= 0; i--) stack.push({ node: kids[i], expanded: false });
      continue;
    }
    stack.pop();
    switch (n.k) {
      case 'num':
        values.push(n.value);
        break;
      case 'tuple':
        values.push({ t: 'tuple' });
        break;
      case 'ellipsis':
        values.push({ t: 'ellipsis' });
        break;
      case 'unary':
        values.push(unary(n.op, values.pop()!, work));
        break;
      case 'bin': {
        const b = values.pop()!;
        const a = values.pop()!;
        values.push(binary(n.op, a, b, work));
        break;
      }
      case 'call': {
        const arg = n.arg ? values.pop()! : null;
        call(n, values.pop()!, arg);
      }
    }
  }
  return values[0];
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
    // CPython parses a failed input again with its error rules (a deeper stack), then reports a tokenizer error
    // anywhere in the source before its own syntax error.
    if (err.secondPassLevel >= PARSER_STACK.second) throw memoryError();
    const last = tokens[tokens.length - 1];
    if (last.kind === 'error') throw last.error;
    if (err.furthest === tokens.length - 1 && last.level > 0) throw syntaxError("'(' was never closed");
    throw syntaxError(FAILURE_MESSAGES[err.kind]);
  }
  if (tree.d > COMPILE_DEPTH_LIMIT) throw new PyError('RecursionError', 'maximum recursion depth exceeded during compilation');
  const value = evaluate(tree, new Work());
  if (!isNumber(value)) {
    throw new PyError('TypeError', `float() argument must be a string or a real number, not '${typeName(value)}'`);
  }
  return pyFloatRepr(pyRound(toFloat(value), 2));
}

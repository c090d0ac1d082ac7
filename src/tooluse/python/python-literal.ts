/**
 * The small subset of Python literal syntax that τ²'s gym accepts in functional tool calls `name(k='v', n=1)`:
 * strings, numbers, True/False/None, lists, tuples, dicts, unary +/- and bare names (read as strings). Rendering
 * values back the same way is `pyRepr` (pyvalue.ts).
 */

export class PythonLiteralError extends Error {}

class Parser {
  pos = 0;
  constructor(readonly src: string) {}

  fail(msg: string): never {
    throw new PythonLiteralError(`${msg} at offset ${this.pos} in ${JSON.stringify(this.src)}`);
  }

  skipWs(): void {
    while (this.pos < this.src.length && /\s/.test(this.src[this.pos]!)) this.pos++;
  }

  peek(): string {
    return this.src[this.pos] ?? '';
  }

  eat(ch: string): boolean {
    this.skipWs();
    if (this.src.startsWith(ch, this.pos)) {
      this.pos += ch.length;
      return true;
    }
    return false;
  }

  expect(ch: string): void {
    if (!this.eat(ch)) this.fail(`expected '${ch}'`);
  }

  identifier(): string | null {
    this.skipWs();
    const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.src.slice(this.pos));
    if (!m) return null;
    this.pos += m[0].length;
    return m[0];
  }

  value(): unknown {
    this.skipWs();
    const ch = this.peek();
    if (ch === "'" || ch === '"') return this.string();
    if (ch === '-' || ch === '+') {
      this.pos++;
      const v = this.value();
      if (typeof v !== 'number') this.fail('unary sign needs a number');
      return ch === '-' ? -v : v;
    }
    if (/[0-9.]/.test(ch)) return this.number();
    if (ch === '[') return this.sequence('[', ']');
    if (ch === '(') return this.sequence('(', ')');
    if (ch === '{') return this.dict();
    const name = this.identifier();
    if (name === null) this.fail('expected a literal');
    if (name === 'True') return true;
    if (name === 'False') return false;
    if (name === 'None') return null;
    return name;
  }

  string(): string {
    // Adjacent literals concatenate, as in Python ('a' 'b' == 'ab').
    let out = this.oneString();
    for (;;) {
      this.skipWs();
      const ch = this.peek();
      if (ch !== "'" && ch !== '"') return out;
      out += this.oneString();
    }
  }

  oneString(): string {
    const quote = this.src[this.pos]!;
    const triple = this.src.startsWith(quote.repeat(3), this.pos);
    const close = triple ? quote.repeat(3) : quote;
    this.pos += close.length;
    let out = '';
    for (;;) {
      if (this.pos >= this.src.length) this.fail('unterminated string');
      if (this.src.startsWith(close, this.pos)) {
        this.pos += close.length;
        return out;
      }
      const c = this.src[this.pos++]!;
      if (c === '\n' && !triple) this.fail('newline in string');
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = this.src[this.pos++] ?? '';
      const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', '0': '\0', a: '\x07', b: '\b', f: '\f', v: '\v', '\n': '' };
      if (e in simple) out += simple[e];
      else if (e === 'x' || e === 'u' || e === 'U') {
        const len = e === 'x' ? 2 : e === 'u' ? 4 : 8;
        const hex = this.src.slice(this.pos, this.pos + len);
        if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(hex)) this.fail(`bad \\${e} escape`);
        out += String.fromCodePoint(parseInt(hex, 16));
        this.pos += len;
      } else out += `\\${e}`; // Python keeps unknown escapes verbatim
    }
  }

  number(): number {
    const m = /^(?:0[xX][0-9a-fA-F_]+|(?:[0-9][0-9_]*)?\.?[0-9_]*(?:[eE][+-]?[0-9]+)?)/.exec(this.src.slice(this.pos));
    if (!m || m[0] === '' || m[0] === '.') this.fail('bad number');
    this.pos += m[0].length;
    const text = m[0].replace(/_/g, '');
    const n = Number(text);
    if (Number.isNaN(n)) this.fail('bad number');
    return n;
  }

  sequence(open: string, close: string): unknown[] {
    this.expect(open);
    const items: unknown[] = [];
    while (!this.eat(close)) {
      items.push(this.value());
      if (!this.eat(',')) {
        this.expect(close);
        break;
      }
    }
    return items;
  }

  dict(): Record<string, unknown> {
    this.expect('{');
    const out: Record<string, unknown> = {};
    while (!this.eat('}')) {
      const key = this.value();
      if (typeof key !== 'string' && typeof key !== 'number') this.fail('dict keys must be strings or numbers');
      this.expect(':');
      out[String(key)] = this.value();
      if (!this.eat(',')) {
        this.expect('}');
        break;
      }
    }
    return out;
  }
}

/** Parses one Python literal (the whole string). */
export function parsePythonLiteral(src: string): unknown {
  const p = new Parser(src);
  const v = p.value();
  p.skipWs();
  if (p.pos !== src.length) p.fail('unexpected trailing text');
  return v;
}

/**
 * Parses the inside of a call's parentheses: `k='v', n=1`. Positional arguments are dropped, as τ²'s parser reads
 * only the keywords (the tool then reports the missing argument).
 */
export function parsePythonKeywordArgs(src: string): Record<string, unknown> {
  const p = new Parser(src);
  const args: Record<string, unknown> = {};
  p.skipWs();
  while (p.pos < src.length) {
    const save = p.pos;
    const name = p.identifier();
    if (name !== null && p.eat('=') && p.peek() !== '=') {
      if (Object.hasOwn(args, name)) p.fail(`keyword argument repeated: ${name}`);
      args[name] = p.value();
    } else {
      p.pos = save;
      p.value();
    }
    p.skipWs();
    if (p.pos >= src.length) break;
    p.expect(',');
    p.skipWs();
  }
  return args;
}

/**
 * Correctly rounded float results computed with bigints, where V8's own arithmetic is not what CPython (via C libm)
 * gives: integer true division of big ints, and `pow`. glibc's `pow` is correctly rounded in practice; V8's
 * `Math.pow` is not (e.g. 1e19 ** 5 is off by one unit in the last place), so `**` on floats uses these.
 */

export function bitLength(v: bigint): number {
  return (v < 0n ? -v : v).toString(2).length;
}

/** Correctly rounded q · 2^e for a positive bigint q (handles subnormal and overflowing results). */
export function scaleByPowerOfTwo(q: bigint, e: number): number {
  const bits = bitLength(q);
  // Exponent of the leading bit of the result is bits - 1 + e. Doubles keep 53 bits (fewer when subnormal).
  const lead = bits - 1 + e;
  const keep = lead >= -1022 ? 53 : Math.max(0, 53 - (-1022 - lead));
  const drop = bits - keep;
  let top = q;
  let shift = e;
  if (drop > 0) {
    const dropB = BigInt(drop);
    const rest = q & ((1n << dropB) - 1n);
    top = q >> dropB;
    const half = 1n << (dropB - 1n);
    if (rest > half || (rest === half && (top & 1n) === 1n)) top += 1n;
    shift = e + drop;
  }
  // top has at most 54 bits, so Number(top) is exact; the powers of two only move the exponent (two steps keep the
  // intermediate in range for subnormal results).
  if (shift < -1000) return Number(top) * 2 ** -1000 * 2 ** (shift + 1000);
  return Number(top) * 2 ** shift;
}

/** Correctly rounded (a / b) · 2^e for positive bigints. */
export function ratioToDouble(a: bigint, b: bigint, e: number): number {
  const shift = Math.max(0, 55 - (bitLength(a) - bitLength(b)));
  const num = a << BigInt(shift);
  let q = num / b;
  if (q * b !== num) q |= 1n; // sticky bit: an inexact quotient never looks like an exact tie
  return scaleByPowerOfTwo(q, e - shift);
}

/** x = m · 2^e with m an odd integer (x finite, nonzero). */
function decompose(x: number): { m: bigint; e: number } {
  let e = 0;
  let ax = Math.abs(x);
  while (!Number.isInteger(ax)) {
    ax *= 2; // exact
    e--;
  }
  let m = BigInt(ax);
  while ((m & 1n) === 0n) {
    m >>= 1n;
    e++;
  }
  return { m, e };
}

/** Correctly rounded x ** n for an integer n (libm's pow is correctly rounded in practice; V8's Math.pow is not). */
export function exactPowInt(x: number, n: number): number {
  const { m, e } = decompose(x);
  const negative = x < 0 && n % 2 !== 0;
  const k = Math.abs(n);
  const mk = m ** BigInt(k);
  const r = n >= 0 ? scaleByPowerOfTwo(mk, e * k) : ratioToDouble(1n, mk, -e * k);
  return negative ? -r : r;
}

// ---- x ** y for non-integer y: fixed-point logarithm and exponential with PREC fractional bits --------------------

const PREC = 192;
const ONE = 1n << BigInt(PREC);

/** 2·atanh(s) = ln((1+s)/(1-s)) for a fixed-point |s| ≤ 1/3. */
function twoAtanh(s: bigint): bigint {
  const s2 = (s * s) >> BigInt(PREC);
  let term = s;
  let sum = 0n;
  for (let k = 1n; term !== 0n; k += 2n) {
    sum += term / k;
    term = (term * s2) >> BigInt(PREC);
  }
  return 2n * sum;
}

const LN2 = twoAtanh(ONE / 3n); // ln 2 = 2·atanh(1/3)

/** ln(m · 2^e) in fixed point, for a positive bigint m. */
function fixedLn(m: bigint, e: number): bigint {
  // Normalise to f = m / 2^(bits-1) in [1, 2); ln x = (e + bits - 1)·ln2 + ln f, with ln f = 2·atanh((f-1)/(f+1)).
  const bits = bitLength(m);
  const f = (m << BigInt(PREC)) >> BigInt(bits - 1);
  const s = ((f - ONE) << BigInt(PREC)) / (f + ONE);
  return BigInt(e + bits - 1) * LN2 + twoAtanh(s);
}

/** exp(t) for a fixed-point t, as a positive bigint q and exponent: exp(t) ≈ q · 2^exp. */
function fixedExp(t: bigint): { q: bigint; exp: number } {
  // t = n·ln2 + r with |r| ≤ ln2/2, exp(t) = 2^n · exp(r), exp(r) by its Taylor series.
  let n = t / LN2;
  let r = t - n * LN2;
  if (2n * r > LN2) {
    n += 1n;
    r -= LN2;
  } else if (2n * r < -LN2) {
    n -= 1n;
    r += LN2;
  }
  let sum = ONE;
  let term = ONE;
  for (let k = 1n; term !== 0n; k++) {
    term = (term * r) / (k << BigInt(PREC));
    sum += term;
  }
  return { q: sum, exp: Number(n) - PREC };
}

/**
 * The double nearest to x ** y for finite x > 0 and finite y (about 190 bits of working precision, so a misrounding
 * would need an exact value within 2^-130 of a midpoint). Overflow gives Infinity, underflow 0 (as libm does).
 */
export function nearestPow(x: number, y: number): number {
  if (!Number.isFinite(x) || !Number.isFinite(y) || Number.isNaN(x) || Number.isNaN(y)) return Math.pow(x, y);
  if (x < 0) {
    // only reached for integer y (a fractional power of a negative number is complex)
    const r = nearestPow(-x, y);
    return Math.abs(y % 2) === 1 ? -r : r;
  }
  if (x === 0 || x === 1 || y === 0) return Math.pow(x, y);
  const rough = y * Math.log(x);
  if (rough > 720) return Infinity;
  if (rough < -760) return 0;
  const { m: xm, e: xe } = decompose(x);
  const { m: ym, e: ye } = decompose(y);
  let t = fixedLn(xm, xe) * ym * (y < 0 ? -1n : 1n);
  t = ye >= 0 ? t << BigInt(ye) : t >> BigInt(-ye);
  const { q, exp } = fixedExp(t);
  return scaleByPowerOfTwo(q, exp);
}

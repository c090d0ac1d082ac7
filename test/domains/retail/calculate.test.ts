import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PyError, pythonCalculate } from '../../../src/domains/retail/calculate.ts';
import { exactPowInt, nearestPow } from '../../../src/tooluse/python/bigfloat.ts';
import { pyFloatRepr } from '../../../src/tooluse/python/pyjson.ts';

/** Expected texts were produced by CPython 3.10–3.13 (identical there) running `str(round(float(eval(e)), 2))`. */
const OK: [string, string][] = [
  ['2+2', '4.0'],
  ['1/3', '0.33'],
  ['2**3', '8.0'],
  ['100000000000000000000*10', '1e+21'],
  ['-2**2', '-4.0'],
  ['2**-1', '0.5'],
  ['2**-1**2', '0.5'],
  ['2**2**3', '256.0'],
  ['(-2)**3', '-8.0'],
  ['(-2)**-3', '-0.12'],
  ['3**-2', '0.11'],
  ['4**0.5', '2.0'],
  ['2**0.5', '1.41'],
  ['7//2', '3.0'],
  ['-7//2', '-4.0'],
  ['7.5//2', '3.0'],
  ['-7.5//2', '-4.0'],
  ['7//-2', '-4.0'],
  ['-0.0//1', '-0.0'],
  ['0.0//-1', '-0.0'],
  ['.5', '0.5'],
  ['5.', '5.0'],
  ['00.5', '0.5'],
  ['01.5', '1.5'],
  ['00', '0.0'],
  ['--1', '1.0'],
  ['+-+1', '-1.0'],
  ['1--1', '2.0'],
  ['  1+1', '2.0'],
  ['1  +  2', '3.0'],
  ['((2))', '2.0'],
  ['0.1+0.2', '0.3'],
  ['2.675', '2.67'],
  ['0.125', '0.12'],
  ['0.375', '0.38'],
  ['1.005', '1.0'],
  ['99.995', '100.0'],
  ['-0.001', '-0.0'],
  ['0*-1', '0.0'],
  ['0.0*-1', '-0.0'],
  ['0.00001', '0.0'],
  ['10**16', '1e+16'],
  ['10**22*1.0', '1e+22'],
  ['2**53+1', '9007199254740992.0'],
  ['10**20/3', '3.333333333333333e+19'],
  ['123456789012345678901234567890/7', '1.763668414462081e+28'],
  ['1000000000000000000000.5', '1e+21'],
  ['2**1023*2.0', 'inf'],
  ['2**-1074*1', '0.0'],
  ['(2**0.5)**(2**0.5)', '1.63'],
  ['1093.34 - 89.99 * 2 + 10/4', '915.86'],
  ['3.14159* .5*10000000000000000000 **5.', '1.570795e+95'], // V8's Math.pow(1e19, 5) is one ulp off
  ['1.05**12', '1.8'],
  ['2**0.5*10**15', '1414213562373095.2'],
];

const ERR: [string, string][] = [
  ['abs(-1)', 'Invalid characters in expression'],
  ['1e5', 'Invalid characters in expression'],
  ['1,2', 'Invalid characters in expression'],
  ['1/0', 'division by zero'],
  ['1.0/0', 'float division by zero'],
  ['0/0.0', 'float division by zero'],
  ['1//0', 'integer division or modulo by zero'],
  ['1.0//0', 'float floor division by zero'],
  ['1//-0.0', 'float floor division by zero'],
  ['0**-1', '0.0 cannot be raised to a negative power'],
  ['0.0**-1', '0.0 cannot be raised to a negative power'],
  ['10**400', 'int too large to convert to float'],
  ['10**400*1.0', 'int too large to convert to float'],
  ['10**400/1', 'integer division result too large for a float'],
  ['2**10000.0', "(34, 'Numerical result out of range')"],
  ['(-8)**0.5', "float() argument must be a string or a real number, not 'complex'"],
  ['(-8)**0.5//1', "unsupported operand type(s) for //: 'complex' and 'int'"],
  ['', 'invalid syntax (<string>, line 0)'],
  ['   ', 'invalid syntax (<string>, line 0)'],
  ['1+', 'invalid syntax (<string>, line 1)'],
  ['1 2', 'invalid syntax (<string>, line 1)'],
  ['1..2', 'invalid syntax (<string>, line 1)'],
  ['*1', 'invalid syntax (<string>, line 1)'],
  ['2****2', 'invalid syntax (<string>, line 1)'],
  ['(1)2', 'invalid syntax (<string>, line 1)'],
  ['(1', "'(' was never closed (<string>, line 1)"],
  ['(1 2', "'(' was never closed (<string>, line 1)"],
  ['5(.', 'invalid syntax (<string>, line 1)'],
  ['1)', "unmatched ')' (<string>, line 1)"],
  ['1)01', "unmatched ')' (<string>, line 1)"],
  ['(1 2)', 'invalid syntax. Perhaps you forgot a comma? (<string>, line 1)'],
  ['01', 'leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers (<string>, line 1)'],
  ['1 2 01', 'leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers (<string>, line 1)'],
  ['(*1)', 'cannot use starred expression here (<string>, line 1)'],
  ['((**3))', 'cannot use double starred expression here (<string>, line 1)'],
  ['()', "float() argument must be a string or a real number, not 'tuple'"],
  ['...', "float() argument must be a string or a real number, not 'ellipsis'"],
  ['()+1', 'can only concatenate tuple (not "int") to tuple'],
  ['1+()', "unsupported operand type(s) for +: 'int' and 'tuple'"],
  ['()*1.5', "can't multiply sequence by non-int of type 'float'"],
  ['()*10**100', "cannot fit 'int' into an index-sized integer"],
  ['-()', "bad operand type for unary -: 'tuple'"],
  ['1**()', "unsupported operand type(s) for ** or pow(): 'int' and 'tuple'"],
  ['1 (2)', "'int' object is not callable"],
  ['()()', "'tuple' object is not callable"],
  ['3(1/0)', 'division by zero'],
  ['1(*2)', '1 argument after * must be an iterable, not int'],
];

test('calculate: results match Python str(round(float(eval(e)), 2))', () => {
  for (const [e, want] of OK) assert.equal(pythonCalculate(e), want, JSON.stringify(e));
});

test('calculate: errors carry CPython messages', () => {
  for (const [e, want] of ERR) {
    assert.throws(
      () => pythonCalculate(e),
      (err: unknown) => err instanceof PyError && err.message === want,
      `${JSON.stringify(e)} should fail with ${want}`,
    );
  }
});

test('calculate: huge integer powers fail fast instead of hanging', () => {
  // The size guard refuses the power from its operands' sizes, before any of it is computed (no clock needed).
  assert.throws(() => pythonCalculate('9**9**9'), (x: unknown) => x instanceof PyError && x.pyType === 'OverflowError' && x.message === 'integer result too large to compute (over 4000000 bits)');
});

test('float powers are correctly rounded (V8 Math.pow is not)', () => {
  // exact values checked with 60-digit decimal arithmetic
  assert.equal(pyFloatRepr(nearestPow(1.9858649637654338, 112.92510388045866)), '4.425907887692042e+33');
  assert.equal(pyFloatRepr(nearestPow(0.7475028498196672, -170.5884997792786)), '3.6324014860519856e+21');
  assert.equal(pyFloatRepr(exactPowInt(1e19, 5)), '1e+95');
  assert.equal(exactPowInt(2, -1074), 5e-324);
  assert.equal(exactPowInt(-3, 3), -27);
  assert.equal(nearestPow(2, 0.5), Math.SQRT2);
  assert.equal(nearestPow(10, 400), Infinity);
});

/** CPython 3.11.7's limits, as `eval` reports them when a module-level function calls it (see calculate.ts). */
test("calculate: Python 3.11's nesting limits, without overflowing the JS stack", () => {
  const r = (s: string, n: number) => s.repeat(n);
  const ok: [string, string][] = [
    [r('(', 200) + '1' + r(')', 200), '1.0'],
    [r('-', 2993) + '1', '-1.0'],
    ['1' + r('+1', 2993), '2994.0'],
    [r('1**', 2987) + '1', '1.0'],
    [r('(', 150) + r('-', 1775) + '1' + r(')', 150), '-1.0'],
  ];
  for (const [e, want] of ok) assert.equal(pythonCalculate(e), want, `${e.slice(0, 20)}… (${e.length} chars)`);
  const err: [string, string, string][] = [
    [r('(', 201) + '1' + r(')', 201), 'SyntaxError', 'too many nested parentheses (<string>, line 1)'],
    [r('(', 5000) + '1' + r(')', 5000), 'SyntaxError', 'too many nested parentheses (<string>, line 1)'],
    ['1 1' + r('(', 201), 'SyntaxError', 'too many nested parentheses (<string>, line 1)'],
    ['1)' + r('(', 201), 'SyntaxError', "unmatched ')' (<string>, line 1)"],
    ['(*1))', 'SyntaxError', "unmatched ')' (<string>, line 1)"],
    [r('-', 5000) + '1', 'RecursionError', 'maximum recursion depth exceeded during compilation'],
    ['1' + r('+1', 2994), 'RecursionError', 'maximum recursion depth exceeded during compilation'],
    ['1' + r('+1', 9999), 'RecursionError', 'maximum recursion depth exceeded during compilation'],
    [r('1+', 500_000) + '1', 'RecursionError', 'maximum recursion depth exceeded during compilation'],
    [r('1(', 100) + r('-', 2894) + '1' + r(')', 100), 'RecursionError', 'maximum recursion depth exceeded during compilation'],
    [r('-', 5976) + '1', 'MemoryError', ''],
    [r('-', 100_000) + '1', 'MemoryError', ''],
    [r('1**', 2988) + '1', 'MemoryError', ''],
    [r('(', 200) + r('-', 376) + '1' + r(')', 200), 'MemoryError', ''],
    [r('(', 150) + r('-', 1776) + '1' + r(')', 150), 'MemoryError', ''],
    [r('-', 5973) + '1 1', 'MemoryError', ''],
    [r('-', 5980) + ')', 'SyntaxError', "unmatched ')' (<string>, line 1)"],
    [r('-', 6000) + ')', 'MemoryError', ''],
    [r('-', 5947) + '(1', 'SyntaxError', "'(' was never closed (<string>, line 1)"],
    ['(10**4300)(*1)', 'ValueError', 'Exceeds the limit (4300 digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit'],
  ];
  for (const [e, type, want] of err) {
    assert.throws(() => pythonCalculate(e), (x: unknown) => x instanceof PyError && x.pyType === type && x.message === want,
      `${e.slice(0, 20)}… (${e.length} chars) should raise ${type}: ${want}`);
  }
  assert.match(String((() => { try { return pythonCalculate('(10**4299)(*1)'); } catch (x) { return (x as Error).message; } })()), /^1000+ argument after \* must be an iterable, not int$/);
});

test('calculate: the size guard counts 3**3999999 right and one expression has a bounded amount of integer work', () => {
  // 3**3999999 has 6.3 M bits (the old guard, (bitLength(3) − 1) · 3999999, said 4 M and let it through).
  assert.throws(() => pythonCalculate('3**3999999'), /integer result too large to compute \(over 4000000 bits\)/);
  assert.equal(pythonCalculate('3**200000 // 3**199998'), '9.0');
  // One such term alone is within one call's work budget; thirty of them are not (the attack that once held the event
  // loop for 10 s): the budget counts the estimated work of each operation before doing it, so the call stops at the
  // limit with its own message, however fast or loaded the machine is.
  const workLimit = (x: unknown) => x instanceof PyError && x.pyType === 'OverflowError' && /^integer arithmetic too expensive to compute \(this expression needs more than the \d+ ms work limit/.test(x.message);
  assert.equal(pythonCalculate('3**2000000-3**2000000'), '0.0');
  assert.equal(pythonCalculate('7**900000//7**899999'), '7.0');
  for (const e of [Array(30).fill('3**2000000-3**2000000').join('+'), Array(30).fill('7**900000//7**899999').join('+')]) {
    assert.throws(() => pythonCalculate(e), workLimit, e.slice(0, 30));
  }
  // 3**3999999 is over the size limit by itself: the size guard stops the first term, before the work budget is asked.
  assert.throws(() => pythonCalculate(Array(30).fill('3**3999999-3**3999999').join('+')), /integer result too large to compute/);
});

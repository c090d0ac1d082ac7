import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareCodePoints, pyFloatRepr, pyJsonDumps, pyJsonString, pyRound } from '../../../src/tooluse/python/pyjson.ts';
import { parseOrderedJson, parsePythonJson } from '../../../src/tooluse/python/ordered-json.ts';
import { PyFloat, pyRepr, pyStr, pyTypeName } from '../../../src/tooluse/python/pyvalue.ts';

test('pyFloatRepr matches Python repr(float)', () => {
  const cases: [number, string][] = [
    [51, '51.0'],
    [0, '0.0'],
    [-0, '-0.0'],
    [50.88, '50.88'],
    [0.1 + 0.2, '0.30000000000000004'],
    [5e-5, '5e-05'],
    [0.0001, '0.0001'],
    [0.00012345, '0.00012345'],
    [1e16, '1e+16'],
    [9999999999999998, '9999999999999998.0'],
    [1.5e300, '1.5e+300'],
    [1e21, '1e+21'],
    [123456789012345680000, '1.2345678901234568e+20'],
    [2 ** -1074, '5e-324'],
    [-1e-7, '-1e-07'],
    [0.04999999999999716, '0.04999999999999716'],
    [Infinity, 'inf'],
    [-Infinity, '-inf'],
    [NaN, 'nan'],
  ];
  for (const [x, want] of cases) assert.equal(pyFloatRepr(x), want, `repr(${x})`);
});

test('pyRound matches Python round(x, 2): exact binary value, exact ties to even', () => {
  const cases: [number, number, string][] = [
    [2.675, 2, '2.67'], // binary value is below the tie
    [0.125, 2, '0.12'], // exact tie → even
    [0.375, 2, '0.38'], // exact tie → even
    [1.005, 2, '1.0'],
    [-2.675, 2, '-2.67'],
    [-0.125, 2, '-0.12'],
    [99.995, 2, '100.0'],
    [-0.001, 2, '-0.0'],
    [4128.45, 2, '4128.45'],
    [49.0 + 4079.45, 2, '4128.45'],
    [0.285, 2, '0.28'],
    [1.115, 2, '1.11'],
    [2.5, 0, '2.0'],
    [3.5, 0, '4.0'],
    [1e22, 2, '1e+22'],
    [1 / 3, 2, '0.33'],
    [12345.678, 2, '12345.68'],
  ];
  for (const [x, nd, want] of cases) assert.equal(pyFloatRepr(pyRound(x, nd)), want, `round(${x}, ${nd})`);
  assert.ok(Object.is(pyRound(-0, 2), -0));
  assert.ok(Number.isNaN(pyRound(NaN, 2)));
  // Math.round(x * 100) / 100 gets these wrong; pyRound must not.
  for (const [x, want] of [[0.015, 0.01], [0.045, 0.04], [0.155, 0.15], [0.185, 0.18]]) {
    assert.notEqual(Math.round(x * 100) / 100, want);
    assert.equal(pyRound(x, 2), want);
  }
});

test('pyJsonDumps follows Python json.dumps defaults (separators, ensure_ascii, floats)', () => {
  assert.equal(pyJsonDumps({ b: 1, a: [1.5, null, true, 'x'] }), '{"b": 1.0, "a": [1.5, null, true, "x"]}');
  assert.equal(pyJsonDumps({ b: 1, a: {} }, { sortKeys: true }), '{"a": {}, "b": 1.0}');
  assert.equal(pyJsonDumps({ n: 3, f: 0.5, big: 10n }, { floats: 'non-integers' }), '{"n": 3, "f": 0.5, "big": 10}');
  assert.equal(pyJsonDumps(new Map([['z', 1], ['1002370030', 2]])), '{"z": 1.0, "1002370030": 2.0}');
  assert.equal(pyJsonDumps([]), '[]');
  assert.equal(pyJsonDumps([Infinity, NaN]), '[Infinity, NaN]');
  assert.equal(pyJsonString('café "q" \\ \n\t\u0001\u007f😀'), '"caf\\u00e9 \\"q\\" \\\\ \\n\\t\\u0001\\u007f\\ud83d\\ude00"');
  assert.throws(() => pyJsonDumps({ a: undefined }), TypeError);
});

test('sort_keys orders by code point like Python', () => {
  assert.ok(compareCodePoints('B', 'a') < 0);
  assert.ok(compareCodePoints('#W1', 'A') < 0);
  assert.ok(compareCodePoints('\uffff', '😀') < 0); // an astral character sorts after every BMP one
  assert.equal(pyJsonDumps(new Map([['b', 1], ['a', 2], ['B', 3]]), { sortKeys: true }), '{"B": 3.0, "a": 2.0, "b": 1.0}');
});

test('parseOrderedJson keeps file order for integer-like keys (JSON.parse does not)', () => {
  const text = '{"9523456873": 1, "1002370030": {"x": [1, 2.5, "s\\u00e9"]}, "a": null, "t": true, "f": false}';
  const parsed = parseOrderedJson(text) as Map<string, unknown>;
  assert.deepEqual([...parsed.keys()], ['9523456873', '1002370030', 'a', 't', 'f']);
  assert.deepEqual(Object.keys(JSON.parse(text)).slice(0, 2), ['1002370030', '9523456873']);
  assert.deepEqual((parsed.get('1002370030') as Map<string, unknown>).get('x'), [1, 2.5, 'sé']);
  assert.throws(() => parseOrderedJson('{"a": 1} x'), SyntaxError);
});

test('pyStr / pyRepr render raw argument values as Python does', () => {
  assert.equal(pyStr('abc'), 'abc');
  assert.equal(pyStr(null), 'None');
  assert.equal(pyStr(true), 'True');
  assert.equal(pyStr(3), '3');
  assert.equal(pyStr(2.5), '2.5');
  assert.equal(pyRepr(['a', 1, { k: "it's" }]), `['a', 1, {'k': "it's"}]`);
});

test('parsePythonJson types numbers as json.loads does', () => {
  const v = parsePythonJson('{"a": 1.0, "b": 2, "c": 1e3, "d": 123456789012345678901234567890, "__proto__": [0.5]}') as Record<string, unknown>;
  assert.ok(v.a instanceof PyFloat);
  assert.equal(pyTypeName(v.a), 'float');
  assert.equal(pyStr(v.a), '1.0');
  assert.equal(pyTypeName(v.b), 'int');
  assert.equal(pyStr(v.c), '1000.0');
  assert.equal(pyStr(v.d), '123456789012345678901234567890');
  assert.deepEqual(Object.keys(v), ['a', 'b', 'c', 'd', '__proto__']);
  assert.equal(pyRepr(v.__proto__), '[0.5]');
  assert.throws(() => parsePythonJson('{"a": }'), SyntaxError);
});

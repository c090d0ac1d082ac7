import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Box,
  Dict,
  Discrete,
  MultiDiscrete,
  OneOf,
  Sequence,
  Space,
  spaceFromJSON,
  Text,
  ToolCallSpace,
  Tuple,
  type FunctionToolSchema,
} from '../../src/gym/index.ts';

/** Shared contract: seeded sampling is reproducible, samples are contained, JSON round-trips to an equal space. */
function checkContract(space: Space, n = 50): void {
  space.seed(123);
  const a = Array.from({ length: n }, () => space.sample());
  space.seed(123);
  const b = Array.from({ length: n }, () => space.sample());
  assert.deepEqual(a, b, `${space}: same seed, same samples`);
  for (const x of a) assert.ok(space.contains(x), `${space} contains its sample ${JSON.stringify(space.valueToJSON(x))}`);
  const json = JSON.parse(JSON.stringify(space.toJSON()));
  const back = spaceFromJSON(json);
  assert.ok(back.equals(space) && space.equals(back), `${space}: JSON round trip gives an equal space`);
  for (const x of a.slice(0, 5)) {
    const enc = JSON.parse(JSON.stringify(space.valueToJSON(x)));
    assert.deepEqual(space.valueFromJSON(enc), x, `${space}: value JSON round trip`);
  }
}

test('Discrete: contains, start, mask, probability', () => {
  const d = new Discrete(3, { start: -1 });
  checkContract(d);
  assert.ok(d.contains(-1) && d.contains(1));
  assert.ok(!d.contains(2) && !d.contains(0.5) && !d.contains('0'));
  assert.deepEqual(d.shape, []);
  d.seed(1);
  for (let i = 0; i < 30; i++) assert.equal(d.sample([0, 1, 0]), 0);
  assert.equal(d.sample([0, 0, 0]), -1, 'all-zero mask gives start');
  for (let i = 0; i < 30; i++) assert.equal(d.sample(undefined, [0, 0, 1]), 1);
  assert.throws(() => d.sample([1, 0]), /mask length/);
  assert.throws(() => new Discrete(0), /positive integer/);
  assert.ok(!d.equals(new Discrete(3)));
  assert.equal(String(new Discrete(4)), 'Discrete(4)');
});

test('Box: bounded and unbounded sampling, dtypes, contains', () => {
  const b = new Box(-1, 2, { shape: [2, 3] });
  checkContract(b);
  assert.deepEqual(b.shape, [2, 3]);
  assert.equal(b.dtype, 'float32');
  assert.ok(b.sample() instanceof Float32Array);
  assert.ok(b.contains(new Float32Array(6)));
  assert.ok(!b.contains(new Float64Array(6)), 'float64 values are not in a float32 box');
  assert.ok(b.contains([0, 0, 0, 0, 0, 2]), 'plain arrays are accepted like Python lists');
  assert.ok(!b.contains([0, 0, 0, 0, 0, 2.5]));
  assert.ok(!b.contains([0, 0, 0]));
  assert.ok(!b.contains(new Float32Array([0, 0, 0, 0, 0, NaN])));

  const u = new Box([-Infinity, 0, -Infinity], [Infinity, Infinity, 5], { dtype: 'float64' });
  checkContract(u);
  u.seed(4);
  let sawNegative = false;
  for (let i = 0; i < 200; i++) {
    const x = u.sample();
    if (x[0]! < 0) sawNegative = true;
    assert.ok(x[1]! >= 0 && x[2]! <= 5);
  }
  assert.ok(sawNegative, 'the unbounded dimension is normal, so it takes negative values');
  assert.ok(!u.isBounded() && u.isBounded('below') === false);
  assert.deepEqual(spaceFromJSON(u.toJSON()).toJSON().low, ['-inf', 0, '-inf']);

  const ib = new Box(0, 3, { shape: [4], dtype: 'int32' });
  checkContract(ib);
  ib.seed(0);
  const seen = new Set<number>();
  for (let i = 0; i < 100; i++) for (const v of ib.sample()) seen.add(v);
  assert.deepEqual([...seen].sort(), [0, 1, 2, 3], 'integer boxes include the upper bound');
  assert.throws(() => new Box(0, Infinity, { dtype: 'int32' }), /finite bounds/);
  assert.throws(() => new Box(1, 0), /low must be <= high/);
  assert.throws(() => new Box([0, 0], [1, 1, 1]), /entries/);
  assert.throws(() => b.sample([1] as unknown), /cannot be masked/);
  const scalar = new Box(0, 1);
  assert.deepEqual(scalar.shape, [], 'scalar bounds without a shape give a 0-d box, as in Gymnasium');
  assert.equal(scalar.sample().length, 1);
  assert.ok(scalar.contains(0.5) && scalar.contains([0.5]) && !scalar.contains(2));
  assert.equal(String(new Box(-1, 1, { shape: [3] })), 'Box(-1, 1, (3,), float32)');
});

test('MultiDiscrete: sample, mask, contains', () => {
  const m = new MultiDiscrete([2, 3, 4], { start: [0, 1, -2] });
  checkContract(m);
  assert.ok(m.contains(Int32Array.from([1, 3, 1])));
  assert.ok(!m.contains(Int32Array.from([2, 1, 0])));
  m.seed(2);
  for (let i = 0; i < 10; i++) assert.deepEqual(Array.from(m.sample([[1, 0], [0, 0, 1], [0, 1, 0, 0]])), [0, 3, -1]);
});

test('Text: default alphanumeric charset, lengths, masks', () => {
  const t = new Text(5);
  checkContract(t);
  assert.ok(t.contains('abc') && !t.contains('') && !t.contains('abcdef') && !t.contains('a-b'));
  assert.ok(!t.contains(5));
  t.seed(9);
  assert.equal(Array.from(t.sample([4, null])).length, 4);
  const onlyB = Array.from(t.characters!, (c) => (c === 'b' ? 1 : 0));
  assert.equal(t.sample([3, onlyB]), 'bbb');
  assert.throws(() => t.sample([2, new Array(t.characters!.length).fill(0)]), /all zero/);
  assert.equal(new Text(3, { minLength: 0 }).sample([null, new Array(62).fill(0)]), '');
  assert.throws(() => t.sample([9, null]), /outside/);
});

test('Text: Unicode charsets count code points and round-trip', () => {
  const t = new Text(4, { minLength: 2, charset: 'aé中🙂' });
  checkContract(t, 200);
  assert.equal(t.characters!.length, 4, 'the emoji is one character');
  assert.ok(t.contains('🙂🙂🙂🙂'), 'four emoji are four characters (eight UTF-16 units)');
  assert.ok(!t.contains('🙂🙂🙂🙂🙂'));
  assert.ok(t.contains('中é') && !t.contains('x中'));
  t.seed(5);
  const seen = new Set(Array.from({ length: 200 }, () => t.sample()).flatMap((s) => Array.from(s)));
  assert.deepEqual([...seen].sort(), ['a', 'é', '中', '🙂'].sort());
  const back = spaceFromJSON(JSON.parse(JSON.stringify(t.toJSON()))) as Text;
  assert.ok(back.contains('🙂é'));

  const any = Text.unicode(50);
  checkContract(any);
  assert.ok(any.contains('') && any.contains('любой текст 🚀 with any chars \u0000'));
  assert.ok(!any.contains('x'.repeat(51)));
  assert.throws(() => any.sample([3, [1]]), /explicit charset/);
  const literal = new Text(3, { charset: ['a', 'n', 'y'] });
  assert.ok(spaceFromJSON(literal.toJSON()).equals(literal), "a literal charset 'any' is not confused with the any-charset");
  assert.ok(!spaceFromJSON(literal.toJSON()).equals(any));
});

test('Dict and Tuple: composite sampling, masks, seeding, contains', () => {
  const d = new Dict({ b: new Discrete(3), a: new Box(0, 1, { shape: [2] }), c: new Text(3) });
  assert.deepEqual(d.keys, ['a', 'b', 'c'], 'keys are sorted');
  checkContract(d);
  const x = d.sample();
  assert.ok(d.contains(x));
  assert.ok(!d.contains({ ...x, extra: 1 }), 'extra keys are rejected');
  const { c: _c, ...missing } = x;
  assert.ok(!d.contains(missing));
  d.seed(1);
  for (let i = 0; i < 10; i++) assert.equal(d.sample({ b: [0, 0, 1] }).b, 2);
  const seeds = d.seed(7) as Record<string, number>;
  assert.deepEqual(Object.keys(seeds), ['a', 'b', 'c']);
  d.seed({ b: 3 });
  const b3 = new Discrete(3, { seed: 3 });
  assert.equal(d.spaces.b!.sample(), b3.sample(), 'seeding a part directly');

  const t = new Tuple([new Discrete(2), new Text(2), new Dict({ x: new Discrete(5) })]);
  checkContract(t);
  assert.ok(t.contains([1, 'ab', { x: 4 }]));
  assert.ok(!t.contains([1, 'ab']) && !t.contains([2, 'ab', { x: 4 }]));
  t.seed(0);
  assert.equal(t.sample([[0, 1], null, null])[0], 1);
  assert.equal((t.seed([1, 2, 3]) as number[]).length, 3);
  assert.throws(() => new Tuple([5 as unknown as Space]), /not a Space/);
});

test('Sequence: unstacked and stacked', () => {
  const s = new Sequence(new Discrete(4));
  checkContract(s);
  assert.ok(s.contains([]) && s.contains([0, 3, 1]) && !s.contains([4]) && !s.contains(3));
  s.seed(3);
  assert.equal((s.sample([5, null]) as number[]).length, 5);
  for (let i = 0; i < 10; i++) assert.ok([2, 4].includes((s.sample([[2, 4], null]) as number[]).length));
  for (const x of (s.sample([6, [0, 0, 1, 0]]) as number[])) assert.equal(x, 2);

  const stacked = new Sequence(new Box(0, 1, { shape: [3] }), { stack: true });
  checkContract(stacked);
  stacked.seed(1);
  const v = stacked.sample([4, null]) as Float32Array;
  assert.ok(v instanceof Float32Array && v.length === 12);
  assert.ok(stacked.contains(new Float32Array(6)) && !stacked.contains(new Float32Array(5)));
  assert.ok(stacked.stackedSpace(4).contains(v));
  const textStack = new Sequence(new Text(3), { stack: true });
  checkContract(textStack);
  assert.ok(textStack.contains(['a', 'bc']));
  assert.ok(!stacked.equals(new Sequence(new Box(0, 1, { shape: [3] }))));
});

test('OneOf: index and value', () => {
  const o = new OneOf([new Discrete(2), new Text(3)]);
  checkContract(o);
  assert.ok(o.contains([0, 1]) && o.contains([1, 'ab']) && !o.contains([0, 'ab']) && !o.contains([2, 0]));
  const seen = new Set<number>();
  o.seed(1);
  for (let i = 0; i < 40; i++) seen.add(o.sample()[0]);
  assert.deepEqual([...seen].sort(), [0, 1]);
});

const TOOLS: FunctionToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'get_order',
      description: 'Look up an order',
      parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'], additionalProperties: false },
    },
  },
  {
    type: 'function',
    function: {
      name: 'return_items',
      description: 'Return items',
      parameters: {
        type: 'object',
        properties: {
          item_ids: { type: 'array', items: { type: 'string' }, minItems: 1 },
          method: { type: 'string', enum: ['card', 'gift_card'] },
          quantity: { type: 'integer', minimum: 1, maximum: 5 },
          price: { type: 'number' },
          urgent: { type: 'boolean' },
          address: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
        required: ['item_ids', 'method'],
        additionalProperties: false,
      },
    },
  },
  { type: 'function', function: { name: 'think', description: 'no parameters' } },
];

test('ToolCallSpace: contains checks arguments against the JSON schema', () => {
  const s = new ToolCallSpace(TOOLS);
  checkContract(s, 100);
  assert.ok(s.contains({ name: 'get_order', arguments: { order_id: '#W1' } }));
  assert.ok(s.contains({ name: 'think', arguments: {} }));
  const bad: [unknown, RegExp][] = [
    [{ name: 'get_order', arguments: {} }, /missing required property "order_id"/],
    [{ name: 'get_order', arguments: { order_id: 5 } }, /expected string/],
    [{ name: 'get_order', arguments: { order_id: 'x', extra: 1 } }, /unexpected property "extra"/],
    [{ name: 'nope', arguments: {} }, /unknown tool "nope"/],
    [{ name: 'get_order', arguments: '{"order_id": "x"}' }, /must be an object/],
    [{ name: 'return_items', arguments: { item_ids: ['a'], method: 'cash' } }, /not one of/],
    [{ name: 'return_items', arguments: { item_ids: [], method: 'card' } }, /fewer than 1/],
    [{ name: 'return_items', arguments: { item_ids: [1], method: 'card' } }, /item_ids\[0\]: expected string/],
    [{ name: 'return_items', arguments: { item_ids: ['a'], method: 'card', quantity: 1.5 } }, /expected integer/],
    [{ name: 'return_items', arguments: { item_ids: ['a'], method: 'card', quantity: 9 } }, /maximum/],
    [{ name: 'return_items', arguments: { item_ids: ['a'], method: 'card', urgent: 'yes' } }, /expected boolean/],
    [{ name: 'return_items', arguments: { item_ids: ['a'], method: 'card', address: {} } }, /missing required property "city"/],
    [{ name: 'get_order', arguments: { order_id: 'x' }, id: 1 }, /unexpected keys/],
  ];
  for (const [call, why] of bad) {
    assert.ok(!s.contains(call), JSON.stringify(call));
    assert.match(s.explain(call)!, why);
  }
  s.seed(8);
  const names = new Set(Array.from({ length: 60 }, () => s.sample().name));
  assert.deepEqual([...names].sort(), ['get_order', 'return_items', 'think']);
  for (let i = 0; i < 10; i++) assert.equal(s.sample([0, 1, 0]).name, 'return_items');
  assert.throws(() => s.sample([0, 0, 0]), /allows no tool/);
  assert.throws(() => new ToolCallSpace([TOOLS[0]!, TOOLS[0]!]), /duplicate/);
  assert.throws(() => new ToolCallSpace([{ type: 'x' } as unknown as FunctionToolSchema]), /type: 'function'/);
});

test('spaceFromJSON rejects unknown types and accepts JSON strings', () => {
  assert.throws(() => spaceFromJSON({ type: 'Graph' }), /unknown space type/);
  assert.throws(() => spaceFromJSON({ nope: 1 }), /"type"/);
  assert.ok(spaceFromJSON(JSON.stringify(new Discrete(3).toJSON())).equals(new Discrete(3)));
});

test('unseeded spaces sample from entropy; seeding makes them reproducible', () => {
  const a = new Discrete(1_000_000);
  const b = new Discrete(1_000_000);
  const xs = Array.from({ length: 5 }, () => a.sample());
  const ys = Array.from({ length: 5 }, () => b.sample());
  assert.notDeepEqual(xs, ys);
  assert.equal(new Discrete(100, { seed: 4 }).sample(), new Discrete(100, { seed: 4 }).sample());
});

test('MultiBinary: 0/1 arrays, Gymnasium mask semantics (0, 1, 2 = random), batching', async () => {
  const { MultiBinary, batchSpace, concatenate, unbatch } = await import('../../src/gym/index.ts');
  const m = new MultiBinary([2, 2]);
  checkContract(m);
  assert.ok(m.contains(Int8Array.from([0, 1, 1, 0])) && m.contains([1, 1, 1, 1]));
  assert.ok(!m.contains([0, 2, 0, 0]) && !m.contains([0, 1]));
  m.seed(0);
  for (let i = 0; i < 10; i++) {
    const x = m.sample([0, 1, 2, 2]);
    assert.equal(x[0], 0);
    assert.equal(x[1], 1);
  }
  assert.throws(() => m.sample([0, 1, 3, 0]), /0, 1 or 2/);
  const b = batchSpace(m, 3);
  assert.ok(b.equals(new MultiBinary([3, 2, 2])));
  const items = [Int8Array.from([0, 0, 0, 1]), Int8Array.from([1, 1, 1, 1]), Int8Array.from([1, 0, 1, 0])];
  const stacked = concatenate(m, items);
  assert.ok(b.contains(stacked));
  assert.deepEqual(unbatch(m, stacked, 3), items);
  const seq = new Sequence(m, { stack: true });
  assert.ok(seq.contains(new Int8Array(0)) && seq.stackedSpace(0).contains(new Int8Array(0)), 'empty stacks are allowed');
});

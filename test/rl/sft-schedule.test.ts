import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lrAt, type LrSchedule } from '../../src/rl/schedule.ts';

const close = (a: number, b: number, msg?: string) => assert.ok(Math.abs(a - b) < 1e-12, `${msg ?? ''} ${a} vs ${b}`);

test('warmup then cosine to minLrRatio, worked values', () => {
  // warmup 4, then cosine over steps 4..12 (span 8): p = (s − 4)/8.
  const s: LrSchedule = { lr: 2, warmupSteps: 4, totalSteps: 13, minLrRatio: 0.1 };
  close(lrAt(0, s), 0.5, 'first warmup step');
  close(lrAt(1, s), 1.0);
  close(lrAt(3, s), 2.0, 'last warmup step reaches the peak');
  close(lrAt(4, s), 2.0, 'p = 0');
  close(lrAt(6, s), 0.2 + 1.8 * 0.5 * (1 + Math.cos(Math.PI / 4)), 'p = 1/4');
  close(lrAt(8, s), 1.1, 'p = 1/2: midway between 2 and 0.2');
  close(lrAt(12, s), 0.2, 'the last step runs at the minimum');
  close(lrAt(50, s), 0.2, 'past the end it stays at the minimum');
  for (let i = 4; i < 12; i++) assert.ok(lrAt(i + 1, s) < lrAt(i, s), 'decreasing after warmup');
});

test('no warmup, linear and constant kinds, one-step schedules', () => {
  close(lrAt(0, { lr: 1, warmupSteps: 0, totalSteps: 5, minLrRatio: 0 }), 1);
  close(lrAt(4, { lr: 1, warmupSteps: 0, totalSteps: 5, minLrRatio: 0 }), 0);
  close(lrAt(2, { lr: 1, warmupSteps: 0, totalSteps: 5, minLrRatio: 0.2, kind: 'linear' }), 0.6);
  close(lrAt(3, { lr: 1, warmupSteps: 2, totalSteps: 5, minLrRatio: 0.2, kind: 'constant' }), 1);
  close(lrAt(0, { lr: 1, warmupSteps: 2, totalSteps: 5, minLrRatio: 0.2, kind: 'constant' }), 0.5);
  close(lrAt(0, { lr: 3, warmupSteps: 0, totalSteps: 1, minLrRatio: 0.5 }), 3);
});

test('bad schedules are rejected with the field named', () => {
  assert.throws(() => lrAt(0, { lr: 0, warmupSteps: 0, totalSteps: 1, minLrRatio: 0 }), /lr must be a positive/);
  assert.throws(() => lrAt(0, { lr: 1, warmupSteps: -1, totalSteps: 1, minLrRatio: 0 }), /warmupSteps/);
  assert.throws(() => lrAt(0, { lr: 1, warmupSteps: 0, totalSteps: 0, minLrRatio: 0 }), /totalSteps/);
  assert.throws(() => lrAt(0, { lr: 1, warmupSteps: 0, totalSteps: 3, minLrRatio: 1.5 }), /minLrRatio/);
  assert.throws(() => lrAt(-1, { lr: 1, warmupSteps: 0, totalSteps: 3, minLrRatio: 0 }), /step must be/);
});

/** The neutral tensor container every reader and writer here speaks: a name → { dtype, shape, data } map. */
import { dataMatchesDType, type DType, type TensorData } from './dtypes.ts';

export interface NamedTensor {
  dtype: DType;
  shape: number[];
  data: TensorData;
}

export type NamedTensors = Map<string, NamedTensor>;

export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

export function shapeString(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** Throws when the data's class or length disagrees with dtype × shape. */
export function checkTensor(name: string, t: NamedTensor): void {
  if (!t.shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw new RangeError(`tensor ${name}: invalid shape ${shapeString(t.shape)}`);
  if (!dataMatchesDType(t.data, t.dtype)) throw new TypeError(`tensor ${name}: ${t.data.constructor.name} does not hold ${t.dtype} data`);
  if (t.data.length !== numel(t.shape)) {
    throw new RangeError(`tensor ${name}: shape ${shapeString(t.shape)} needs ${numel(t.shape)} elements, data has ${t.data.length}`);
  }
}

/** Swaps the last two axes of a row-major float32 tensor of `shape` (any number of leading batch axes). */
export function transposeLast2(data: Float32Array, shape: readonly number[]): Float32Array {
  if (shape.length < 2) throw new RangeError(`transposeLast2 needs at least 2 axes, got ${shapeString(shape)}`);
  const rows = shape[shape.length - 2], cols = shape[shape.length - 1];
  const batch = numel(shape.slice(0, -2));
  const out = new Float32Array(data.length);
  for (let b = 0; b < batch; b++) {
    const base = b * rows * cols;
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) out[base + c * rows + r] = data[base + r * cols + c];
    }
  }
  return out;
}

/** Shape helpers and checks. All errors name the operation and both shapes; nothing broadcasts silently. */
export type Shape = readonly number[];

export function shapeSize(shape: Shape): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

export function formatShape(shape: Shape): string {
  return `[${shape.join(', ')}]`;
}

export function assertValidShape(shape: Shape, what = 'shape'): void {
  if (!Array.isArray(shape)) throw new TypeError(`${what} must be an array of dimensions, got ${String(shape)}`);
  for (const d of shape) {
    if (!Number.isInteger(d) || d < 0) throw new RangeError(`${what} ${formatShape(shape)} has an invalid dimension ${d}`);
  }
}

export function sameShape(a: Shape, b: Shape): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

export function assertSameShape(op: string, a: Shape, b: Shape, names = ['a', 'b']): void {
  if (!sameShape(a, b)) throw new Error(`${op}: shape mismatch, ${names[0]} is ${formatShape(a)} but ${names[1]} is ${formatShape(b)}`);
}

/** The last dimension and the product of the others (rows × cols view of a tensor). */
export function rowsCols(op: string, shape: Shape): { rows: number; cols: number } {
  if (shape.length === 0) throw new Error(`${op}: needs at least 1 dimension, got a scalar`);
  const cols = shape[shape.length - 1];
  return { rows: cols === 0 ? shapeSize(shape.slice(0, -1)) : shapeSize(shape) / cols, cols };
}

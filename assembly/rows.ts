// Row gather/scatter (embedding forward/backward) and transposition of the last two axes.
import { shareStart } from './simd';

/** out[i] = table[ids[i]] for i < n; ids are i32 and already range-checked. Threads split the ids. */
export function gatherRows(tid: i32, nthreads: i32, table: usize, ids: usize, out: usize, n: i32, cols: i32): void {
  const i0 = shareStart(tid, nthreads, n, 1), i1 = shareStart(tid + 1, nthreads, n, 1);
  const rowBytes = <usize>cols * 4;
  for (let i = i0; i < i1; i++) {
    const id = load<i32>(ids + <usize>i * 4);
    memory.copy(out + <usize>i * rowBytes, table + <usize>id * rowBytes, rowBytes);
  }
}

/** table[ids[i]] += rows[i]. Threads split columns, so repeated ids never race. */
export function scatterAddRows(tid: i32, nthreads: i32, table: usize, ids: usize, rows: usize, n: i32, cols: i32): void {
  const c0 = shareStart(tid, nthreads, cols, 4), c1 = shareStart(tid + 1, nthreads, cols, 4);
  const rowBytes = <usize>cols * 4;
  for (let i = 0; i < n; i++) {
    const dst = table + <usize>load<i32>(ids + <usize>i * 4) * rowBytes, src = rows + <usize>i * rowBytes;
    let c = c0;
    for (; c + 4 <= c1; c += 4) { const o = <usize>c * 4; v128.store(dst + o, f32x4.add(v128.load(dst + o), v128.load(src + o))); }
    for (; c < c1; c++) { const o = <usize>c * 4; store<f32>(dst + o, load<f32>(dst + o) + load<f32>(src + o)); }
  }
}

const TB: i32 = 32;

/** y[b][c][r] = x[b][r][c] for x of shape [batch, rows, cols]; 32×32 blocks, threads split the blocks. */
export function transpose(tid: i32, nthreads: i32, x: usize, y: usize, batch: i32, rows: i32, cols: i32): void {
  const rb = (rows + TB - 1) / TB, cb = (cols + TB - 1) / TB;
  const blocks = batch * rb * cb;
  const k0 = shareStart(tid, nthreads, blocks, 1), k1 = shareStart(tid + 1, nthreads, blocks, 1);
  const mat = <usize>rows * <usize>cols * 4;
  for (let k = k0; k < k1; k++) {
    const b = k / (rb * cb), rest = k % (rb * cb);
    const r0 = (rest / cb) * TB, c0 = (rest % cb) * TB;
    const r1 = min(rows, r0 + TB), c1 = min(cols, c0 + TB);
    const xb = x + <usize>b * mat, yb = y + <usize>b * mat;
    for (let r = r0; r < r1; r++) {
      for (let c = c0; c < c1; c++) {
        store<f32>(yb + (<usize>c * <usize>rows + <usize>r) * 4, load<f32>(xb + (<usize>r * <usize>cols + <usize>c) * 4));
      }
    }
  }
}

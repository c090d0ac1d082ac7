/** Token embedding: x[n] = E[ids[n]]; backward scatters dx rows back into dE (repeated ids accumulate). */
import type { Tensor } from '../../engine/index.ts';
import { TAG, type LayerContext } from './context.ts';

export function embeddingForward(ctx: LayerContext, table: Tensor, ids: Int32Array): Tensor {
  const V = table.shape[0];
  for (let i = 0; i < ids.length; i++) {
    if (!(ids[i] >= 0 && ids[i] < V)) throw new RangeError(`embedding: token id ${ids[i]} at position ${i} is outside the vocabulary [0, ${V})`);
  }
  return ctx.backend.gatherRows(table, ids, { tag: TAG.act });
}

export function embeddingBackward(ctx: LayerContext, gradTable: Tensor | undefined, ids: Int32Array, dx: Tensor): void {
  if (gradTable) ctx.backend.scatterAddRows(gradTable, ids, dx);
}

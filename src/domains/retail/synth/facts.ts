/** Facts both the solver (for communicate_info) and the expert (in its answers) derive from records the same way. */
import { pyRound } from '../../../tooluse/python/pyjson.ts';

export function orderTotal(items: readonly { price: number }[]): number {
  return pyRound(items.reduce((s, i) => s + i.price, 0), 2);
}

export const formatMoney = (x: number): string => x.toFixed(2);

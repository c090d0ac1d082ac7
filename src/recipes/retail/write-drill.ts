/**
 * Write drill: every expert conversation that writes, cut right after its first write call, so the SFT spends its
 * tokens on the decision that held-out episodes get wrong (which action the customer's request calls for, and its
 * arguments) rather than on what follows it. Address writes get a fresh address as in the address drill
 * (address-drill.ts). Records render like expert trajectories without the system prompt; the loss falls on the agent's
 * turns. Deterministic for a seed.
 */
import type { Address } from '../../domains/retail/schema.ts';
import { SynthRng } from '../../domains/retail/synth/rng.ts';
import type { TrajectoryRecord } from '../../rl/sft-data.ts';
import { addressPrefix, freshAddress, swapAddress } from './address-drill.ts';

export interface WriteDrillOptions {
  /** Number of drill conversations. */
  documents: number;
  seed?: number;
}

type Message = TrajectoryRecord['messages'][number];

/** The retail write tools (the `write` kind in src/domains/retail/tools/). */
export const RETAIL_WRITES: readonly string[] = [
  'cancel_pending_order', 'modify_pending_order_address', 'modify_pending_order_items', 'modify_pending_order_payment',
  'modify_user_address', 'return_delivered_order_items', 'exchange_delivered_order_items',
];

/** The drill conversations, `documents` of them drawn from the expert trajectories that write. */
export function writeDrillRecords(experts: readonly TrajectoryRecord[], options: WriteDrillOptions): TrajectoryRecord[] {
  if (!(Number.isInteger(options.documents) && options.documents >= 1)) throw new RangeError(`writeDrill: documents must be a positive integer, got ${options.documents}`);
  const prefixes: { messages: Message[]; address?: Address; contextOnly?: number[] }[] = [];
  for (const r of experts) {
    const at = r.messages.findIndex((m) => m.role === 'assistant' && (m.toolCalls ?? []).some((c) => RETAIL_WRITES.includes(c.name)));
    if (at < 0) continue;
    const address = addressPrefix(r);
    const contextOnly = r.contextOnly?.filter((i) => i <= at);
    const prefix = address && address.messages.length === at + 1 ? address : { messages: r.messages.slice(0, at + 1) };
    prefixes.push(contextOnly?.length ? { ...prefix, contextOnly } : prefix);
  }
  if (prefixes.length === 0) throw new Error('writeDrill: no expert trajectory calls a write tool');
  const rng = new SynthRng(options.seed ?? 0);
  const out: TrajectoryRecord[] = [];
  for (let d = 0; d < options.documents; d++) {
    const p = rng.pick(prefixes);
    const messages = p.address ? swapAddress(p.messages, p.address, freshAddress(rng, p.address)) : p.messages;
    out.push({ taskId: `write_drill_${d}`, messages, ...(p.contextOnly ? { contextOnly: p.contextOnly } : {}) });
  }
  return out;
}

/**
 * Address drill: expert conversations that ask for an address change (a pending order's shipping address, or the
 * account's default address), each with the requested address swapped for a fresh random one, and cut right after
 * the agent's write call. The agent must copy the new address from the customer's sentence into its confirmation and
 * then, field by field, into `modify_pending_order_address` / `modify_user_address`.
 *
 * Why: with ids and names copied (copyDrill.ts, identityDrill.ts), held-out address tasks still fail on the address
 * itself. The agent writes the right zip and a plausible but wrong street and city ("289 Cedar Avenue, Houston, TX
 * NC 28971"): street names and cities come from short lists, so a model that has seen each training address once or
 * twice learns to guess among them instead of copying, the failure the identity drill fixed for names.
 *
 * The swap is consistent: the rendered address (`549 Maple Drive, Suite 133, Charlotte, NC 28971, USA`) is replaced in
 * every message's text and each field in every tool call's arguments. The new address keeps the old one's shape
 * (a suite or not), so the sentences around it stay the expert's. Records render like expert trajectories without the
 * system prompt; the loss falls on the agent's turns. Deterministic for a seed.
 */
import { makeAddress } from '../../domains/retail/synth/world.ts';
import { renderAddress } from '../../domains/retail/synth/protocol.ts';
import { SynthRng } from '../../domains/retail/synth/rng.ts';
import type { Address } from '../../domains/retail/schema.ts';
import type { TrajectoryRecord } from '../../rl/sftData.ts';

export interface AddressDrillOptions {
  /** Number of drill conversations. */
  documents: number;
  seed?: number;
}

type Message = TrajectoryRecord['messages'][number];

export const ADDRESS_WRITES: readonly string[] = ['modify_pending_order_address', 'modify_user_address'];
const FIELDS = ['address1', 'address2', 'city', 'state', 'country', 'zip'] as const;

/** The conversation up to and including its first address write, and the address written; undefined when it has none. */
export function addressPrefix(record: TrajectoryRecord): { messages: Message[]; address: Address } | undefined {
  const at = record.messages.findIndex((m) => m.role === 'assistant' && (m.toolCalls ?? []).some((c) => ADDRESS_WRITES.includes(c.name)));
  if (at < 0) return undefined;
  const args = record.messages[at].toolCalls!.find((c) => ADDRESS_WRITES.includes(c.name))!.arguments as Record<string, unknown>;
  if (!FIELDS.every((f) => typeof args[f] === 'string')) return undefined;
  const address = Object.fromEntries(FIELDS.map((f) => [f, args[f] as string])) as unknown as Address;
  // only when the customer said the address as the synthetic world renders it (so the swap finds it)
  const rendered = renderAddress(address);
  if (!record.messages.slice(0, at).some((m) => m.role === 'user' && m.content?.includes(rendered))) return undefined;
  return { messages: record.messages.slice(0, at + 1), address };
}

function freshAddress(rng: SynthRng, like: Address): Address {
  const a = makeAddress(rng);
  return { ...a, address2: like.address2 ? `Suite ${rng.int(100, 999)}` : '', country: like.country };
}

function swap(messages: readonly Message[], from: Address, to: Address): Message[] {
  const oldText = renderAddress(from), newText = renderAddress(to);
  return messages.map((m) => {
    const out: Message = { ...m };
    if (typeof m.content === 'string') out.content = m.content.split(oldText).join(newText);
    if (m.toolCalls) {
      out.toolCalls = m.toolCalls.map((c) => {
        if (!ADDRESS_WRITES.includes(c.name)) return c;
        const args: Record<string, unknown> = { ...c.arguments };
        for (const f of FIELDS) if (typeof args[f] === 'string' && args[f] === from[f]) args[f] = to[f];
        return { ...c, arguments: args };
      });
    }
    return out;
  });
}

/** The retail write tools (the `write` kind in src/domains/retail/tools/). */
export const RETAIL_WRITES: readonly string[] = [
  'cancel_pending_order', 'modify_pending_order_address', 'modify_pending_order_items', 'modify_pending_order_payment',
  'modify_user_address', 'return_delivered_order_items', 'exchange_delivered_order_items',
];

/**
 * Write drill: every expert conversation that writes, cut right after its first write call, so the SFT spends its
 * tokens on the decision that held-out episodes get wrong (which action the customer's request calls for, and its
 * arguments) rather than on what follows it. Address writes get a fresh address as in the address drill.
 */
export function writeDrillRecords(experts: readonly TrajectoryRecord[], options: AddressDrillOptions): TrajectoryRecord[] {
  if (!(Number.isInteger(options.documents) && options.documents >= 1)) throw new RangeError(`writeDrill: documents must be a positive integer, got ${options.documents}`);
  const prefixes: { messages: Message[]; address?: Address }[] = [];
  for (const r of experts) {
    const at = r.messages.findIndex((m) => m.role === 'assistant' && (m.toolCalls ?? []).some((c) => RETAIL_WRITES.includes(c.name)));
    if (at < 0) continue;
    const address = addressPrefix(r);
    prefixes.push(address && address.messages.length === at + 1 ? address : { messages: r.messages.slice(0, at + 1) });
  }
  if (prefixes.length === 0) throw new Error('writeDrill: no expert trajectory calls a write tool');
  const rng = new SynthRng(options.seed ?? 0);
  const out: TrajectoryRecord[] = [];
  for (let d = 0; d < options.documents; d++) {
    const p = rng.pick(prefixes);
    out.push({ taskId: `write_drill_${d}`, messages: p.address ? swap(p.messages, p.address, freshAddress(rng, p.address)) : p.messages });
  }
  return out;
}

/** The drill conversations, over the expert trajectories that write an address the customer stated. */
export function addressDrillRecords(experts: readonly TrajectoryRecord[], options: AddressDrillOptions): TrajectoryRecord[] {
  if (!(Number.isInteger(options.documents) && options.documents >= 1)) throw new RangeError(`addressDrill: documents must be a positive integer, got ${options.documents}`);
  const prefixes = experts.map(addressPrefix).filter((p) => p !== undefined);
  if (prefixes.length === 0) throw new Error(`addressDrill: no expert trajectory writes an address the customer stated (${ADDRESS_WRITES.join(' / ')})`);
  const rng = new SynthRng(options.seed ?? 0);
  const out: TrajectoryRecord[] = [];
  for (let d = 0; d < options.documents; d++) {
    const p = rng.pick(prefixes);
    out.push({ taskId: `address_drill_${d}`, messages: swap(p.messages, p.address, freshAddress(rng, p.address)) });
  }
  return out;
}

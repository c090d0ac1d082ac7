/**
 * Address drill: expert conversations that ask for an address change (a pending order's shipping address, or the
 * account's default address), each with the requested address swapped for a fresh random one, and cut right after
 * the agent's write call. The agent must copy the new address from the customer's sentence into its confirmation and
 * then, field by field, into `modify_pending_order_address` / `modify_user_address`.
 *
 * Why: with ids and names copied (copy-drill.ts, identity-drill.ts), held-out address tasks still fail on the address
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
import type { TrajectoryRecord } from '../../rl/sft-data.ts';

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

/** A fresh random address of the same shape as `like` (a suite or not, the same country). */
export function freshAddress(rng: SynthRng, like: Address): Address {
  const a = makeAddress(rng);
  return { ...a, address2: like.address2 ? `Suite ${rng.int(100, 999)}` : '', country: like.country };
}

/** `messages` with the address `from` replaced by `to` in every text and in every address write's arguments. */
export function swapAddress(messages: readonly Message[], from: Address, to: Address): Message[] {
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

/** The drill conversations, over the expert trajectories that write an address the customer stated. */
export function addressDrillRecords(experts: readonly TrajectoryRecord[], options: AddressDrillOptions): TrajectoryRecord[] {
  if (!(Number.isInteger(options.documents) && options.documents >= 1)) throw new RangeError(`addressDrill: documents must be a positive integer, got ${options.documents}`);
  const prefixes = experts.map(addressPrefix).filter((p) => p !== undefined);
  if (prefixes.length === 0) throw new Error(`addressDrill: no expert trajectory writes an address the customer stated (${ADDRESS_WRITES.join(' / ')})`);
  const rng = new SynthRng(options.seed ?? 0);
  const out: TrajectoryRecord[] = [];
  for (let d = 0; d < options.documents; d++) {
    const p = rng.pick(prefixes);
    out.push({ taskId: `address_drill_${d}`, messages: swapAddress(p.messages, p.address, freshAddress(rng, p.address)) });
  }
  return out;
}

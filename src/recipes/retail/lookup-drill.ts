/**
 * Lookup drill: the ids of a tool result copied into the next calls, in the JSON the agent really reads.
 *
 * The copy drill (copy-drill.ts) lists ids in plain text, and a model trained on it copies 7–10-digit ids from such a
 * list. In retail conversations the same model gets the seventh digit of an order id wrong when it copies it from the
 * `get_user_details` result 40–70 tokens back (`orderIdDigitNll` of scripts/copy-nll.ts at commit 550649c): the first six digits cost
 * ≈ 0.001 nats and the seventh ≈ 0.5, and product ids (10 digits) fare the same. Each conversation has one or two such
 * copies; this drill has a dozen.
 *
 * A drill conversation is an expert conversation up to its `get_user_details` result, followed by `get_order_details`
 * on the user's orders in a random order (each order id copied from the user's list, further back with every call)
 * and, after some of them, `get_product_details` on the product id of one of the order's items (copied from the order
 * just read). The tool results are the retail tools' own outputs on the conversation's world. Only the first of those
 * lookups copies from the distance that fails (the others come after longer order details), so the drill also has a
 * short form: the same opening, the user's order ids in the `get_user_details` result replaced by fresh random ones,
 * and one `get_order_details` call on one of them, where the document ends (`freshOrderLookupRecord`). The records
 * render like expert trajectories without the system prompt, so the loss falls on the agent's turns. Deterministic for
 * a seed.
 */
import type { RetailDomain } from '../../domains/retail/domain.ts';
import { itemNote, variantNote } from '../../domains/retail/synth/expert.ts';
import { SynthRng } from '../../domains/retail/synth/rng.ts';
import type { TrajectoryRecord } from '../../rl/sft-data.ts';
import { executeToolCall } from '../../tooluse/execute.ts';

export interface LookupDrillOptions {
  seed?: number;
  /** Orders looked up at most per drill conversation (default 5; fewer when the user has fewer). */
  maxOrders?: number;
  /** Probability that an order lookup is followed by a product lookup of one of its items (default 0.5). */
  products?: number;
  /** Each product lookup comes after a note naming the item, as the expert's `notes` write it (expert.ts, `itemNote`). */
  notes?: boolean;
  /**
   * Recall (with `notes`): each order lookup is followed by a product lookup after a note that names up to this many
   * items drawn from all the orders read so far, one per line in a random order, the looked-up item last (in place of
   * `products`' lookups). Each line is an item's text from order details read up to a few thousand tokens back, found
   * by its name alone: the copy the expert's notes before product lookups and item proposals need. Default 0: none,
   * and the drill's draws unchanged.
   */
  recall?: number;
  /**
   * Recall turns more after the last order lookup (default 0), each a fresh draw: users have about two orders, so a
   * drill reads four or five items, and these turns give it more notes for the tokens its order details cost.
   */
  recallTurns?: number;
  /**
   * Variant lines per recall turn (default 0), mixed in with the item lines: an item read whose product's details the
   * drill has read, and another variant of that product, as the notes before exchange and modification proposals write
   * it (`{…item…} -> {"options": {…}, "item_id": …}`, expert.ts `variantNote`). The product details print a variant's
   * id before its options, so the id after the options is found by the options: the copy those proposals need.
   */
  variants?: number;
}

type Variant = { item_id: string; options: Record<string, string> };

/** The variants of a product-details output (none for an error string). */
function productVariants(out: string): Variant[] {
  let variants: unknown;
  try {
    variants = (JSON.parse(out) as { variants?: unknown }).variants;
  } catch {
    return [];
  }
  if (typeof variants !== 'object' || variants === null) return [];
  return Object.values(variants).filter((v): v is Variant => typeof v?.item_id === 'string' && typeof v?.options === 'object' && v.options !== null && Object.values(v.options).every((o) => typeof o === 'string'));
}

type Item = { name: string; product_id: string; item_id: string };

/** The items of an order-details output (none for an error string). */
function orderItems(out: string): Item[] {
  let items: unknown;
  try {
    items = (JSON.parse(out) as { items?: unknown }).items;
  } catch {
    return []; // an error string: no items
  }
  return Array.isArray(items) ? items.filter((it): it is Item => typeof it?.product_id === 'string' && typeof it?.name === 'string' && typeof it?.item_id === 'string') : [];
}

type Message = TrajectoryRecord['messages'][number];

/** The index of the tool message that answers a `get_user_details` call, and the user's order ids in it. */
function userDetails(record: TrajectoryRecord): { at: number; orders: string[] } | undefined {
  for (let i = 0; i + 1 < record.messages.length; i++) {
    const m = record.messages[i];
    const call = m.role === 'assistant' ? (m.toolCalls ?? []).find((c) => c.name === 'get_user_details') : undefined;
    if (!call || (m.toolCalls?.length ?? 0) !== 1) continue;
    const answer = record.messages[i + 1];
    if (answer.role !== 'tool' || typeof answer.content !== 'string' || answer.content.startsWith('Error')) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(answer.content);
    } catch {
      continue;
    }
    const orders = (parsed as { orders?: unknown }).orders;
    if (!Array.isArray(orders) || orders.length === 0 || !orders.every((o): o is string => typeof o === 'string')) continue;
    return { at: i + 1, orders };
  }
  return undefined;
}

/**
 * The drill conversation of one expert record on its world's `domain`, or undefined when the record has no successful
 * `get_user_details` call with orders.
 */
export function lookupDrillRecord(record: TrajectoryRecord, domain: RetailDomain, rng: SynthRng, options: LookupDrillOptions = {}): TrajectoryRecord | undefined {
  const maxOrders = options.maxOrders ?? 5, products = options.products ?? 0.5, recall = options.recall ?? 0, recallTurns = options.recallTurns ?? 0, variantLines = options.variants ?? 0;
  if (!(Number.isInteger(maxOrders) && maxOrders >= 1)) throw new RangeError(`lookupDrill: maxOrders must be a positive integer, got ${maxOrders}`);
  if (!(products >= 0 && products <= 1)) throw new RangeError(`lookupDrill: products must be a probability in [0, 1], got ${products}`);
  if (!(Number.isInteger(recall) && recall >= 0)) throw new RangeError(`lookupDrill: recall must be a non-negative integer, got ${recall}`);
  if (recall > 0 && !options.notes) throw new RangeError('lookupDrill: recall writes notes; set notes as well');
  if (!(Number.isInteger(recallTurns) && recallTurns >= 0)) throw new RangeError(`lookupDrill: recallTurns must be a non-negative integer, got ${recallTurns}`);
  if (recallTurns > 0 && recall === 0) throw new RangeError('lookupDrill: recallTurns needs recall > 0');
  if (!(Number.isInteger(variantLines) && variantLines >= 0)) throw new RangeError(`lookupDrill: variants must be a non-negative integer, got ${variantLines}`);
  if (variantLines > 0 && recall === 0) throw new RangeError('lookupDrill: variants needs recall > 0');
  const found = userDetails(record);
  if (!found) return undefined;
  const messages: Message[] = record.messages.slice(0, found.at + 1);
  const order = rng.shuffle([...found.orders]).slice(0, maxOrders);
  const db = domain.freshDb();
  let n = 0;
  const call = (name: string, args: Record<string, string>, note?: string): string => {
    const id = `lookup_${n++}`;
    messages.push({ role: 'assistant', content: null, toolCalls: [{ id, name, arguments: args }], ...(note !== undefined ? { reasoning: note } : {}) });
    const out = executeToolCall(domain, db, { name, arguments: args }).output;
    messages.push({ role: 'tool', id, content: out });
    return out;
  };
  const read: Item[] = [];
  /** The variants of each product whose details the drill has read. */
  const details = new Map<string, Variant[]>();
  const recallTurn = (): void => {
    const lines: { text: string; product: string }[] = rng.shuffle([...read]).slice(0, recall).map((it) => ({ text: itemNote(it), product: it.product_id }));
    if (variantLines > 0) {
      const pairs = read.flatMap((it) => (details.get(it.product_id) ?? []).filter((v) => v.item_id !== it.item_id).map((v) => ({ text: variantNote(it, v), product: it.product_id })));
      lines.push(...rng.shuffle(pairs).slice(0, variantLines));
    }
    const note = variantLines > 0 ? rng.shuffle(lines) : lines;
    const last = note[note.length - 1].product;
    const out = call('get_product_details', { product_id: last }, note.map((l) => l.text).join('\n'));
    if (variantLines > 0 && !details.has(last)) details.set(last, productVariants(out));
  };
  for (const orderId of order) {
    const out = call('get_order_details', { order_id: orderId });
    const listed = orderItems(out);
    read.push(...listed);
    if (recall > 0) {
      if (read.length > 0) recallTurn();
      continue;
    }
    if (!rng.chance(products) || listed.length === 0) continue;
    const item = rng.pick(listed);
    call('get_product_details', { product_id: item.product_id }, options.notes ? itemNote(item) : undefined);
  }
  for (let t = 0; t < recallTurns && read.length > 0; t++) recallTurn();
  const contextOnly = record.contextOnly?.filter((i) => i < found.at);
  return { taskId: `lookup_drill_${record.taskId ?? ''}`, messages, ...(contextOnly?.length ? { contextOnly } : {}) };
}

/**
 * The short form: the expert conversation up to its `get_user_details` result, the user's order ids in it replaced by
 * fresh random ones (`#W` and seven digits, as the world generator draws them), and a `get_order_details` call on one of
 * them, picked uniformly; undefined when the record has no successful `get_user_details` call with orders.
 */
export function freshOrderLookupRecord(record: TrajectoryRecord, rng: SynthRng): TrajectoryRecord | undefined {
  const found = userDetails(record);
  if (!found) return undefined;
  const answer = record.messages[found.at];
  const fresh = new Set<string>();
  while (fresh.size < found.orders.length) fresh.add('#W' + rng.digits(7, true));
  const ids = [...fresh];
  // Each old id is quoted in the result exactly where the list has it ("#W…"), so a quoted replacement touches nothing else.
  let content = answer.content!;
  found.orders.forEach((old, i) => { content = content.split(`"${old}"`).join(`"${ids[i]}"`); });
  const messages: Message[] = [
    ...record.messages.slice(0, found.at),
    { ...answer, content },
    { role: 'assistant', content: null, toolCalls: [{ id: 'lookup_0', name: 'get_order_details', arguments: { order_id: rng.pick(ids) } }] },
  ];
  const contextOnly = record.contextOnly?.filter((i) => i < found.at);
  return { taskId: `order_lookup_drill_${record.taskId ?? ''}`, messages, ...(contextOnly?.length ? { contextOnly } : {}) };
}

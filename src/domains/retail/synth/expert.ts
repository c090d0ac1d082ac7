/**
 * The expert: a deterministic, policy-following retail agent (no LLM). It reads the user's texts (through the shared
 * protocol of protocol.ts) and the tool results, authenticates by email or name + zip, looks up what it needs one
 * call at a time, refuses what the policy forbids, lists the details and waits for an explicit yes before every
 * write, makes one write per request, answers questions with the exact facts, and transfers when asked for a human.
 *
 * With `mistakes` it is an imperfect demonstrator (expert-mistakes.ts): at its decision points it sometimes makes a
 * plausible mistake that the τ² reward detects. The confirmation still states what the user asked for (the scripted
 * user checks every id, reason and address of a confirmation against its goal and says no to anything else, which
 * would correct the mistake); the mistake is in the write call after the yes. The exceptions are `forbidden_act`,
 * whose confirmation proposes the forbidden action (the user agrees to it), and `withhold_info`, a reply without the
 * fact. Without `mistakes` (or at rate 0) it is the perfect expert, message for message.
 */
import type { Message } from '../../../tooluse/messages.ts';
import type { AgentTurn } from '../../../tooluse/orchestrator.ts';
import { TRANSFER_MESSAGE } from '../../../tooluse/user.ts';
import type { Address } from '../schema.ts';
import { ADDRESS_FIELDS } from '../schema.ts';
import type { AgentEpisodeContext, AgentNotes, AgentSession, SynthAgent } from './agent.ts';
import { detectKind, isYes, ORDER_ID_IN_TEXT, parseIdentity, parsePaymentMention, parseReason, type ExpertKind, type IdentityDetails } from './expert-parse.ts';
import { parseOrder, parseProduct, parseUser, type OrderJson, type ProductJson, type UserJson } from './expert-records.ts';
import { MistakeMaker, type ExpertMistakeOptions, type MistakeRecord, type Slip, type SlipOptions } from './expert-mistakes.ts';
import { formatMoney, orderTotal } from './facts.ts';
import { CONFIRM_MARKER, extractOrderDescription, findNames, INVALID_REASONS, parseAddress, parseOptions, REASON_PHRASES, renderAddress, renderOptions, VALID_REASONS } from './protocol.ts';
import { SynthRng } from './rng.ts';

const ANYTHING_ELSE = 'Is there anything else I can help you with?';

interface Pair {
  itemId: string;
  newItemId: string;
  name: string;
  productId: string;
  options: Record<string, string>;
}

interface Plan {
  kind: ExpertKind;
  /** The request and any later answers about it. */
  text: string;
  awaitingConfirmation: boolean;
  /** The agent just asked for a missing detail: the next user text answers it. */
  asked: boolean;
  confirmed: boolean;
  executed: boolean;
  writeOutput: string | null;
  userRefreshed: boolean;
  /** The mistake made on this request (at most one per request), if any. */
  mistake: MistakeRecord | null;
  /** forbidden_act on another user's order: go ahead as if it were the user's. */
  foreign: boolean;
  /** forbidden_act on an invalid cancellation reason: the user's reason, to be recorded as a valid one. */
  forcedReason: string | null;
}

interface CallSpec {
  name: string;
  arguments: Record<string, unknown>;
}

/** One turn of the expert: a call or a text, with an optional note (its chain of thought, `notes`). */
type Step = ({ call: CallSpec } | { say: string }) & { note?: string };

const call = (name: string, args: Record<string, unknown>): Step => ({ call: { name, arguments: args } });
const say = (text: string): Step => ({ say: text });

/**
 * A JSON object as the retail tools print theirs (Python's `json.dumps`: `", "` and `": "` separators), so a note's
 * fragment is, token for token, the text it was read from.
 */
export function toolJson(fields: readonly (readonly [string, string | Record<string, string>])[]): string {
  const value = (v: string | Record<string, string>): string => (typeof v === 'string' ? JSON.stringify(v) : toolJson(Object.entries(v)));
  return `{${fields.map(([k, v]) => `${JSON.stringify(k)}: ${value(v)}`).join(', ')}}`;
}

/** An order item as the order details print it, up to its item id: `{"name": …, "product_id": …, "item_id": …}`. */
export function itemNote(item: { name: string; product_id: string; item_id: string }): string {
  return toolJson([['name', item.name], ['product_id', item.product_id], ['item_id', item.item_id]]);
}

/** An item and the variant it becomes, as the notes before exchange and modification proposals write it. */
export function variantNote(item: { name: string; product_id: string; item_id: string }, to: { options: Record<string, string>; item_id: string }): string {
  return `${itemNote(item)} -> ${toolJson([['options', to.options], ['item_id', to.item_id]])}`;
}

/**
 * The variants of a product as its details print them, in printed order, up to and including `itemId`: each entry
 * `"<id>": {"item_id": "<id>", "options": {…}` sliced verbatim from the tool's text up to its options (so a note that
 * repeats them repeats the tokens read; availability and price are left out, a third of an entry's tokens). Null when
 * the text has no variants object or no such variant. The order is the text's: a parsed object would put the ids below
 * 2^32 − 1 first, as JavaScript orders integer keys.
 */
export function variantEntries(productText: string, itemId: string): string[] | null {
  const open = productText.indexOf('"variants": {');
  if (open < 0) return null;
  const entries: string[] = [];
  let i = open + '"variants": {'.length;
  while (i < productText.length) {
    if (productText.startsWith(', ', i)) i += 2;
    if (productText[i] !== '"') return null;
    const keyEnd = productText.indexOf('"', i + 1);
    if (keyEnd < 0 || !productText.startsWith(': {', keyEnd + 1)) return null;
    const key = productText.slice(i + 1, keyEnd);
    const close = closingBrace(productText, keyEnd + 3);
    if (close < 0) return null;
    const options = productText.indexOf('"options": {', keyEnd);
    const optionsClose = options >= 0 && options < close ? closingBrace(productText, options + '"options": '.length) : -1;
    entries.push(productText.slice(i, (optionsClose >= 0 ? optionsClose : close) + 1));
    if (key === itemId) return entries;
    i = close + 1;
    if (productText[i] === '}') return null;
  }
  return null;
}

/**
 * The items of an order as its details print them, in printed order, up to and including the item at `index` of its
 * `items` list: each item's JSON object sliced verbatim from the tool's text (name, product id, item id, price, options).
 * Null when the text has no items list or fewer items. The note before a product lookup with the item walk
 * (`ExpertAgentOptions.itemWalk`) repeats them, one per line or joined as printed.
 */
export function itemEntries(orderText: string, index: number): string[] | null {
  const open = orderText.indexOf('"items": [');
  if (open < 0 || !(Number.isInteger(index) && index >= 0)) return null;
  const entries: string[] = [];
  let i = open + '"items": ['.length;
  while (entries.length <= index) {
    if (orderText.startsWith(', ', i)) i += 2;
    if (orderText[i] !== '{') return null;
    const close = closingBrace(orderText, i);
    if (close < 0) return null;
    entries.push(orderText.slice(i, close + 1));
    i = close + 1;
  }
  return entries;
}

/** The index of the brace that closes the JSON object opening at `text[at]` (braces inside strings skipped), or −1. */
export function closingBrace(text: string, at: number): number {
  let depth = 0, inString = false;
  for (let j = at; j < text.length; j++) {
    const ch = text[j];
    if (inString) {
      if (ch === '\\') j++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === '{') depth++;
    else if (ch === '}' && --depth === 0) return j;
  }
  return -1;
}

/**
 * The note before an exchange or modification proposal with the variant walk (`ExpertAgentOptions.walk`): the item and
 * the options wanted, then the product's variants as printed up to the one that has them, then the item and that
 * variant, its id first as the product details print it. Every id in it is then copied forwards: the walk repeats
 * the printed text in order, and the last line's id follows `{"item_id": "` as in the walk's last entry, a few dozen
 * tokens back. Without the walk (`variantNote`) the id must be found by the options that follow it.
 */
export function walkNote(item: { name: string; product_id: string; item_id: string }, to: { options: Record<string, string>; item_id: string }, entries: readonly string[]): string {
  return [
    `${itemNote(item)} -> ${toolJson([['options', to.options]])}`,
    ...entries,
    `${itemNote(item)} -> ${toolJson([['item_id', to.item_id], ['options', to.options]])}`,
  ].join('\n');
}

/** Where a note of a rendered conversation or drill opens (harmony's analysis channel) and where a message ends. */
const NOTE_OPEN = '<|channel|>analysis<|message|>', MESSAGE_END = '<|end|>';

/**
 * Which id of a note starts at `at` in rendered harmony text `text`, or undefined when `at` is not the start of a note's
 * id: `product` or `item` in an item's text (`itemNote`), `variant` for the new item id after a proposal note's ` -> `
 * (`variantNote`, `walkNote`), `walk` for the two ids of a variant entry the walk repeats (`variantEntries`).
 * Diagnostics use it to score the copies the notes are for (scripts/copy-nll.ts and scripts/recall-nll.ts at commit 550649c).
 */
export function noteIdKind(text: string, at: number): 'product' | 'item' | 'variant' | 'walk' | undefined {
  const open = text.lastIndexOf(NOTE_OPEN, at - 1);
  if (open < 0 || open < text.lastIndexOf(MESSAGE_END, at - 1)) return undefined;
  const line = text.slice(Math.max(open + NOTE_OPEN.length, text.lastIndexOf('\n', at - 1) + 1), at);
  if (line.includes(' -> ')) return line.endsWith('"item_id": "') ? 'variant' : undefined;
  if (line === '"' || /^"\d+": \{"item_id": "$/.test(line)) return 'walk';
  return line.endsWith('"product_id": "') ? 'product' : line.endsWith('"item_id": "') ? 'item' : undefined;
}

function addressArgs(a: Address): Record<string, string> {
  return Object.fromEntries(ADDRESS_FIELDS.map((f) => [f, a[f]]));
}

/** The invalid cancellation reason the user gave, as its protocol label ('changed my mind', …), if recognisable. */
function invalidReasonLabel(text: string): string | null {
  const t = text.toLowerCase();
  return INVALID_REASONS.find((r) => (REASON_PHRASES[r] ?? []).some((p) => t.includes(p.toLowerCase()))) ?? null;
}

/** τ²'s communicate normalisation (evaluator.ts `communicated`): case and commas are ignored in the text. */
const normalise = (text: string): string => text.toLowerCase().replaceAll(',', '');

/**
 * The request in the words of the expert's later messages (`restate`): "cancel an order" before "Here are the details:
 * cancel order …", "pay for an order with another payment method" before "pay for order … with the payment method …".
 * Said in the first reply, next to the user's own sentence, the kind of request becomes a phrase of the agent's that a
 * later decision can copy, rather than a meaning to find again in the user's words many tool results back.
 */
export function restatement(kind: ExpertKind): string {
  if (typeof kind === 'object') {
    switch (kind.info) {
      case 'order_total': return 'know the total of an order';
      case 'order_status': return 'know the status of an order';
      case 'tracking_id': return 'know the tracking number of an order';
      case 'order_count': return 'know how many orders you have';
      case 'gift_card_balance': return 'know the balance of your gift card';
    }
  }
  switch (kind) {
    case 'human': return 'talk to a human agent';
    case 'cancel': return 'cancel an order';
    case 'modify_payment': return 'pay for an order with another payment method';
    case 'modify_address': return 'set the shipping address of an order';
    case 'modify_user_address': return 'update your default address';
    case 'modify_items': return 'modify items in an order';
    case 'exchange': return 'exchange items in an order';
    case 'return': return 'return items from an order';
  }
}

/** The valid reason a forbidden cancellation is recorded with (the closest of the two the tool accepts). */
const SUBSTITUTE_REASON = VALID_REASONS[0];

class ExpertSession implements AgentSession {
  private userId: string | null = null;
  private user: UserJson | null = null;
  private readonly identity: IdentityDetails = {};
  private readonly tried = new Set<string>();
  private lastLookupFailed = false;
  private authGaveUp = false;
  private readonly orders = new Map<string, OrderJson>();
  private readonly missingOrders = new Set<string>();
  private readonly products = new Map<string, ProductJson>();
  private plan: Plan | null = null;
  private pending: CallSpec | null = null;
  private closingSent = false;
  /** The mistake behind the write call in flight (to note a tool error on it). */
  private pendingMistake: MistakeRecord | null = null;
  /** The agent's own texts so far, normalised (only kept with mistakes on). */
  private readonly said: string[] = [];

  /** With the walk: the text of each product's details as the tool printed it. */
  private readonly productTexts = new Map<string, string>();
  /** With the item walk: the text of each order's details as the tools last printed it. */
  private readonly orderTexts = new Map<string, string>();
  /** With the item walk: the order whose details the last tool result printed (null when it printed something else). */
  private lastOrderRead: string | null = null;
  /** With the item walk: the order items (`<order id> <index>`) whose order was read again before their walk. */
  private readonly reread = new Set<string>();

  constructor(private readonly mk: MistakeMaker | null = null, private readonly restate = false, private readonly writeNotes = false,
    private readonly walk = false, private readonly itemWalk: boolean | 'printed' = false) {}

  act(observed: readonly Message[]): AgentTurn {
    for (const m of observed) {
      if (m.role === 'tool') this.onToolResult(m.content, m.error);
      else if (m.role === 'user' && typeof m.content === 'string') this.onUserText(m.content);
      else if (this.mk && m.role === 'assistant' && typeof m.content === 'string') this.said.push(normalise(m.content));
    }
    const step = this.decide();
    const reasoning = this.writeNotes && step.note !== undefined ? { reasoning: step.note } : {};
    if ('call' in step) {
      this.pending = step.call;
      return { content: null, toolCalls: [step.call], ...reasoning };
    }
    if (this.mk) this.said.push(normalise(step.say));
    return { content: step.say, toolCalls: null, ...reasoning };
  }

  notes(): AgentNotes | undefined {
    if (!this.mk) return undefined;
    return { mistakes: this.mk.records.map((r) => ({ ...r })), mistakeOpportunities: this.mk.opportunities };
  }

  // ---- observations --------------------------------------------------------------------------------------------

  private onUserText(text: string): void {
    const id = parseIdentity(text);
    for (const k of ['email', 'firstName', 'lastName', 'zip'] as const) if (id[k] !== undefined) this.identity[k] = id[k];
    const plan = this.plan;
    if (plan?.awaitingConfirmation) {
      plan.awaitingConfirmation = false;
      if (isYes(text)) {
        plan.confirmed = true;
        return;
      }
      this.plan = null; // "no": drop the proposal; a restated request below starts a new one
    }
    if (plan?.asked && this.plan === plan) {
      plan.asked = false;
      plan.text += '\n' + text;
      return;
    }
    const kind = detectKind(text);
    if (kind !== null) {
      this.plan = { kind, text, awaitingConfirmation: false, asked: false, confirmed: false, executed: false, writeOutput: null, userRefreshed: false, mistake: null, foreign: false, forcedReason: null };
      this.closingSent = false;
    } else if (this.plan) this.plan.text += '\n' + text;
  }

  private onToolResult(content: string, error: boolean): void {
    const c = this.pending;
    this.pending = null;
    const mistake = this.pendingMistake;
    this.pendingMistake = null;
    if (mistake && error) mistake.detail += ` (the tool refused it: ${content})`;
    if (!c) return;
    this.lastOrderRead = null;
    switch (c.name) {
      case 'find_user_id_by_email':
      case 'find_user_id_by_name_zip':
        this.lastLookupFailed = error;
        if (!error) this.userId = content;
        return;
      case 'get_user_details': {
        const u = error ? null : parseUser(content);
        if (u) this.user = u;
        if (this.plan) this.plan.userRefreshed = true;
        return;
      }
      case 'get_order_details': {
        const o = error ? null : parseOrder(content);
        if (o) {
          this.orders.set(o.order_id, o);
          if (this.itemWalk) {
            this.orderTexts.set(o.order_id, content);
            this.lastOrderRead = o.order_id;
          }
        } else this.missingOrders.add(String(c.arguments.order_id));
        return;
      }
      case 'get_product_details': {
        const p = error ? null : parseProduct(content);
        if (p) {
          this.products.set(p.product_id, p);
          if (this.walk) this.productTexts.set(p.product_id, content);
        }
        return;
      }
      default: {
        if (!this.plan) return;
        this.plan.executed = true;
        this.plan.writeOutput = error ? null : content;
        if (error) return;
        if (c.name === 'modify_user_address') {
          const u = parseUser(content);
          if (u) this.user = u;
        } else if (c.name !== 'transfer_to_human_agents') {
          const o = parseOrder(content);
          if (o) {
            this.orders.set(o.order_id, o);
            if (this.itemWalk) this.orderTexts.set(o.order_id, content);
          }
        }
      }
    }
  }

  // ---- decisions -----------------------------------------------------------------------------------------------

  private decide(): Step {
    if (this.userId === null) return this.authenticate();
    if (this.user === null) return call('get_user_details', { user_id: this.userId });
    const plan = this.plan;
    if (plan === null) {
      if (this.closingSent) return say(`Thank you for contacting us. ${ANYTHING_ELSE}`);
      this.closingSent = true;
      return say(`How can I help you with your account today?`);
    }
    if (plan.executed) return this.report(plan);
    return this.work(plan);
  }

  private authenticate(): Step {
    const { email, firstName, lastName, zip } = this.identity;
    if (this.authGaveUp) return say("I'm sorry, but I couldn't verify your identity, so I can't help with account-specific requests.");
    if (email && !this.tried.has('e:' + email.toLowerCase())) {
      this.tried.add('e:' + email.toLowerCase());
      return call('find_user_id_by_email', { email });
    }
    if (firstName && lastName && zip) {
      const key = `n:${firstName}|${lastName}|${zip}`.toLowerCase();
      if (!this.tried.has(key)) {
        this.tried.add(key);
        return call('find_user_id_by_name_zip', { first_name: firstName, last_name: lastName, zip });
      }
    }
    if (this.tried.size === 0) {
      const request = this.restate && this.plan ? restatement(this.plan.kind) : null;
      const opening = request === null ? 'I can help with that.' : `I can help with that: you would like to ${request}.`;
      return say(`${opening} First, could you please provide your email address, or your first and last name and zip code, so I can verify your identity?`);
    }
    const triedEmail = [...this.tried].some((k) => k.startsWith('e:'));
    const triedName = [...this.tried].some((k) => k.startsWith('n:'));
    if (this.lastLookupFailed && this.tried.size < 2 && !(triedEmail && triedName)) {
      this.lastLookupFailed = false;
      return triedEmail
        ? say("I couldn't find an account with that email. Could you please provide your first and last name and your zip code?")
        : say("I couldn't find an account with those details. Could you please provide your email address?");
    }
    this.authGaveUp = true;
    return say("I'm sorry, but I couldn't verify your identity, so I can't help with account-specific requests.");
  }

  private refuse(why: string): Step {
    this.plan = null;
    return say(`I'm sorry, but ${why} ${ANYTHING_ELSE}`);
  }

  /** The order the plan is about, or the step needed to find it. */
  private resolveOrder(plan: Plan): OrderJson | Step {
    const user = this.user!;
    const id = ORDER_ID_IN_TEXT.exec(plan.text)?.[0];
    if (id) {
      const o = this.orders.get(id);
      if (o) return o;
      if (this.missingOrders.has(id)) return this.refuse(`I couldn't find order ${id}.`);
      return call('get_order_details', { order_id: id });
    }
    for (const oid of user.orders) if (!this.orders.has(oid) && !this.missingOrders.has(oid)) return call('get_order_details', { order_id: oid });
    const mine = user.orders.map((oid) => this.orders.get(oid)).filter((o): o is OrderJson => o !== undefined);
    const names = [...new Set(mine.flatMap((o) => o.items.map((i) => i.name)))];
    const { description } = extractOrderDescription(plan.text);
    const mentioned = description === null ? [] : [...new Set(findNames(description, names).map((f) => f.name))];
    const matches = mine.filter((o) => mentioned.every((n) => o.items.some((i) => i.name === n)));
    if (mentioned.length > 0 && matches.length === 1) return matches[0]!;
    return this.ask(plan, 'Which order is this about? Could you give me the order id?');
  }

  private paymentId(plan: Plan, order: OrderJson | null): string | null {
    const mention = parsePaymentMention(plan.text);
    if (!mention) return null;
    const methods = Object.values(this.user!.payment_methods);
    if (mention.kind === 'original') return order?.payment_history[0]?.payment_method_id ?? null;
    if (mention.kind === 'credit_card') return methods.find((m) => m.source === 'credit_card' && m.last_four === mention.lastFour)?.id ?? null;
    return methods.find((m) => m.source === mention.kind)?.id ?? null;
  }

  /** Item changes named in the text: for each order item named, its target variant (stated options over current). */
  private changes(plan: Plan, order: OrderJson): Pair[] | Step {
    const text = extractOrderDescription(plan.text).rest;
    const found = findNames(text, order.items.map((i) => i.name));
    const pairs: Pair[] = [];
    for (const [index, item] of order.items.entries()) {
      const keys = Object.keys(item.options);
      let stated: Record<string, string> = {};
      found.forEach((f, k) => {
        if (f.name === item.name) stated = { ...stated, ...parseOptions(text.slice(f.at, found[k + 1]?.at ?? text.length), keys) };
      });
      if (Object.keys(stated).length === 0) continue;
      const product = this.products.get(item.product_id);
      if (!product) {
        const walked = this.walkTo(order, index, `${order.order_id} ${index}`);
        if (walked !== null && typeof walked !== 'string') return walked;
        return { ...call('get_product_details', { product_id: item.product_id }), note: walked ?? itemNote(item) };
      }
      const wanted = { ...item.options, ...stated };
      const target = Object.values(product.variants).find((v) => keys.every((k) => v.options[k] === wanted[k]) && Object.keys(v.options).length === keys.length);
      if (!target || !target.available || target.item_id === item.item_id) {
        return this.refuse(`there is no other available ${item.name} with ${renderOptions(wanted)}.`);
      }
      pairs.push({ itemId: item.item_id, newItemId: target.item_id, name: item.name, productId: item.product_id, options: target.options });
    }
    return pairs.length > 0 ? pairs : this.ask(plan, 'Which items would you like to change, and to which options?');
  }

  /**
   * With the item walk, the text of the walk: the order's items as printed up to the one at `index` (`itemEntries`),
   * one a line or joined as printed; but first, once per `key`, the call that reads the order again when its details
   * are not the last tool result, so that the walk starts at the first item of the text just printed. Null without
   * the item walk (or with an unreadable text).
   */
  private walkTo(order: OrderJson, index: number, key: string): Step | string | null {
    if (!this.itemWalk) return null;
    if (this.lastOrderRead !== order.order_id && !this.reread.has(key)) {
      this.reread.add(key);
      return call('get_order_details', { order_id: order.order_id });
    }
    return itemEntries(this.orderTexts.get(order.order_id) ?? '', index)?.join(this.itemWalk === 'printed' ? ', ' : '\n') ?? null;
  }

  private ask(plan: Plan, question: string): Step {
    plan.asked = true;
    return say(question);
  }

  private confirm(plan: Plan, details: string): Step {
    plan.awaitingConfirmation = true;
    return say(`${details} Do you confirm that you want me to proceed ${CONFIRM_MARKER}?`);
  }

  // ---- mistakes (decision points; all no-ops without a mistake knob) --------------------------------------------

  /** One decision point of the plan: the mistaken alternative chosen, or null (the right choice). */
  private slip<T>(plan: Plan, options: () => SlipOptions<T>): Slip<T> | null {
    if (!this.mk || plan.mistake) return null;
    const d = this.mk.decide(options());
    if (!d) return null;
    plan.mistake = d.record;
    return d.slip;
  }

  /** The plan's write: the right call, or at a mistake one of the mistaken calls (the confirmation named the right one). */
  private write(plan: Plan, right: CallSpec, options: () => SlipOptions<CallSpec>): Step {
    const chosen = this.slip(plan, options)?.value ?? right;
    if (this.mk) this.pendingMistake = plan.mistake;
    return call(chosen.name, chosen.arguments);
  }

  /** Whether a reply without `facts` would leave one of them unsaid so far (so the COMMUNICATE check can fail). */
  private canWithhold(reply: string, facts: readonly string[]): boolean {
    const r = normalise(reply);
    return facts.some((f) => f !== '' && !r.includes(f.toLowerCase()) && !this.said.some((t) => t.includes(f.toLowerCase())));
  }

  private withheld(reply: string, facts: readonly string[], detail: string): Slip<'withhold'>[] {
    return this.canWithhold(reply, facts) ? [{ detail, value: 'withhold' }] : [];
  }

  /**
   * A refusal, which is a decision point: the refusal that states `facts`, one without them (withhold_info), or, when
   * `act` is given, going ahead with the forbidden request (forbidden_act; returns null and the caller goes on).
   */
  private refusal(plan: Plan, full: string, short: string, facts: readonly string[], act?: { detail: string; go: () => void }): Step | null {
    const slip = this.slip<'withhold' | 'act'>(plan, () => ({
      withhold_info: this.withheld(short, facts, `refused without stating ${facts.map((f) => `'${f}'`).join(', ')}: "${short}"`),
      forbidden_act: act ? [{ detail: act.detail, value: 'act' }] : [],
    }));
    if (slip?.value === 'act') {
      act!.go();
      return null;
    }
    return this.refuse(slip?.value === 'withhold' ? short : full);
  }

  /** An answer to a question (a decision point): with its fact, or without it (withhold_info). */
  private reply(plan: Plan, full: string, short: string, fact: string): Step {
    const slip = this.slip(plan, () => ({ withhold_info: this.withheld(short, [fact], `answered without '${fact}': "${short}"`) }));
    return say(`${slip ? short : full} ${ANYTHING_ELSE}`);
  }

  /** The user's other orders the expert has looked up, with a status the tool accepts. */
  private otherOrders(orderId: string | null, pred: (o: OrderJson) => boolean): OrderJson[] {
    return this.user!.orders.map((oid) => this.orders.get(oid)).filter((o): o is OrderJson => o !== undefined && o.order_id !== orderId && o.user_id === this.userId && pred(o));
  }

  /** Whether payment method `pm` of the user can pay `amount` (a gift card needs the balance). */
  private canPay(pm: string, amount: number): boolean {
    const m = this.user!.payment_methods[pm];
    return m !== undefined && (m.source !== 'gift_card' || (m.balance ?? 0) >= amount);
  }

  // ---- work --------------------------------------------------------------------------------------------------------

  private work(plan: Plan): Step {
    const kind = plan.kind;
    if (kind === 'human') {
      plan.executed = true;
      plan.writeOutput = null;
      return call('transfer_to_human_agents', { summary: `The user asks to speak with a human agent. Request: ${plan.text.split('\n')[0]}` });
    }
    if (kind === 'modify_user_address') {
      const address = parseAddress(plan.text);
      if (!address) return this.ask(plan, 'What is the new default address?');
      if (plan.confirmed) {
        const written = this.write(plan, { name: 'modify_user_address', arguments: { user_id: this.userId!, ...addressArgs(address) } }, () => ({
          address_target: this.otherOrders(null, (o) => o.status === 'pending').map((o) => ({
            detail: `changed the shipping address of order ${o.order_id} instead of the default address`,
            value: { name: 'modify_pending_order_address', arguments: { order_id: o.order_id, ...addressArgs(address) } },
          })),
        }));
        // The user id as the user details print it first (`{"user_id": "…", …`), right before the call that needs it.
        return { ...written, note: toolJson([['user_id', this.userId!]]) };
      }
      return this.confirm(plan, `Here is the change: update your default address to ${renderAddress(address)}.`);
    }
    if (typeof kind === 'object') return this.answer(plan, kind.info);
    const resolved = this.resolveOrder(plan);
    if (!('order_id' in resolved)) return resolved;
    const order = resolved;
    const id = order.order_id;
    if (order.user_id !== this.userId && !plan.foreign) {
      const act = (kind === 'cancel' || kind === 'modify_address') && order.status === 'pending' ? { detail: `went ahead with a ${kind} of order ${id} of another user (${order.user_id}) instead of refusing`, go: () => (plan.foreign = true) } : undefined;
      const refused = this.refusal(plan, `order ${id} does not belong to your account, so I can't help with it.`, '', [], act);
      if (refused) return refused;
    }
    switch (kind) {
      case 'cancel': {
        if (order.status !== 'pending') return this.refusal(plan, `I can't cancel order ${id} because its status is '${order.status}'; only pending orders can be cancelled.`, `I can't cancel order ${id}.`, [order.status])!;
        const reason = parseReason(plan.text);
        if (reason === null) return this.ask(plan, "What is the reason for the cancellation: 'no longer needed' or 'ordered by mistake'?");
        if ('invalid' in reason && plan.forcedReason === null) {
          const label = invalidReasonLabel(plan.text);
          const act = label === null ? undefined : { detail: `cancelled order ${id} for the reason '${label}' (recorded as '${SUBSTITUTE_REASON}') instead of refusing`, go: () => (plan.forcedReason = label) };
          const refused = this.refusal(plan, "an order can only be cancelled if it is no longer needed or was ordered by mistake, so I can't cancel it for that reason.", `I can't cancel order ${id} for that reason.`, VALID_REASONS, act);
          if (refused) return refused;
        }
        const recorded = 'valid' in reason ? reason.valid : SUBSTITUTE_REASON;
        if (plan.confirmed) {
          return this.write(plan, { name: 'cancel_pending_order', arguments: { order_id: id, reason: recorded } }, () => ({
            cancel_reason: VALID_REASONS.filter((r) => r !== recorded).map((r) => ({ detail: `cancelled order ${id} with the reason '${r}' instead of '${recorded}'`, value: { name: 'cancel_pending_order', arguments: { order_id: id, reason: r } } })),
            wrong_order: this.otherOrders(id, (o) => o.status === 'pending').map((o) => ({ detail: `cancelled order ${o.order_id} instead of ${id}`, value: { name: 'cancel_pending_order', arguments: { order_id: o.order_id, reason: recorded } } })),
          }));
        }
        const items = order.items.map((i) => i.name).join(', ');
        const because = plan.forcedReason === null ? `the reason '${recorded}'` : `the reason '${plan.forcedReason}', which I will record as '${recorded}'`;
        return this.confirm(plan, `Here are the details: cancel order ${id} (${items}) with ${because}.`);
      }
      case 'modify_address': {
        if (order.status !== 'pending') return this.refusal(plan, `I can't modify order ${id} because its status is '${order.status}'; only pending orders can be modified.`, `I can't modify order ${id}.`, [order.status])!;
        const address = parseAddress(plan.text);
        if (!address) return this.ask(plan, 'What is the new shipping address?');
        if (plan.confirmed) {
          return this.write(plan, { name: 'modify_pending_order_address', arguments: { order_id: id, ...addressArgs(address) } }, () => ({
            wrong_order: this.otherOrders(id, (o) => o.status === 'pending').map((o) => ({ detail: `changed the shipping address of order ${o.order_id} instead of ${id}`, value: { name: 'modify_pending_order_address', arguments: { order_id: o.order_id, ...addressArgs(address) } } })),
            address_target: [{ detail: `changed the user's default address instead of the shipping address of order ${id}`, value: { name: 'modify_user_address', arguments: { user_id: this.userId!, ...addressArgs(address) } } }],
          }));
        }
        return this.confirm(plan, `Here is the change: set the shipping address of order ${id} to ${renderAddress(address)}.`);
      }
      case 'modify_payment': {
        if (order.status !== 'pending') return this.refusal(plan, `I can't modify order ${id} because its status is '${order.status}'; only pending orders can be modified.`, `I can't modify order ${id}.`, [order.status])!;
        const pm = this.paymentId(plan, order);
        if (!pm) return this.ask(plan, 'Which payment method would you like to use instead?');
        if (plan.confirmed) {
          return this.write(plan, { name: 'modify_pending_order_payment', arguments: { order_id: id, payment_method_id: pm } }, () => {
            const paid = order.payment_history[0];
            const singlePayment = (o: OrderJson) => o.payment_history.length === 1 && o.payment_history[0]!.transaction_type === 'payment';
            return {
              payment_method: paid
                ? Object.keys(this.user!.payment_methods)
                    .filter((m) => m !== pm && m !== paid.payment_method_id && this.canPay(m, paid.amount))
                    .map((m) => ({ detail: `paid for order ${id} with ${m} instead of ${pm}`, value: { name: 'modify_pending_order_payment', arguments: { order_id: id, payment_method_id: m } } }))
                : [],
              wrong_order: this.otherOrders(id, (o) => o.status === 'pending' && singlePayment(o) && o.payment_history[0]!.payment_method_id !== pm && this.canPay(pm, o.payment_history[0]!.amount)).map((o) => ({
                detail: `changed the payment method of order ${o.order_id} instead of ${id}`,
                value: { name: 'modify_pending_order_payment', arguments: { order_id: o.order_id, payment_method_id: pm } },
              })),
            };
          });
        }
        return this.confirm(plan, `Here is the change: pay for order ${id} with the payment method ${pm}; the original payment will be refunded.`);
      }
      case 'modify_items':
      case 'exchange': {
        const exchange = kind === 'exchange';
        const required = exchange ? 'delivered' : 'pending';
        if (order.status !== required) {
          const verb = exchange ? 'exchange items of' : 'modify';
          return this.refusal(plan, `I can't ${verb} order ${id} because its status is '${order.status}'; only ${required} orders can be ${exchange ? 'exchanged' : 'modified'}.`, `I can't ${verb} order ${id}.`, [order.status])!;
        }
        const pairs = this.changes(plan, order);
        if (!Array.isArray(pairs)) return pairs;
        const pm = this.paymentId(plan, order);
        if (!pm) return this.ask(plan, 'Which payment method would you like to use for the price difference?');
        const tool = exchange ? 'exchange_delivered_order_items' : 'modify_pending_order_items';
        const args = { order_id: id, item_ids: pairs.map((p) => p.itemId), new_item_ids: pairs.map((p) => p.newItemId), payment_method_id: pm };
        if (plan.confirmed) return this.write(plan, { name: tool, arguments: args }, () => this.itemSlips(order, pairs, pm, tool));
        const list = pairs.map((p) => `${p.name} ${p.itemId} -> ${p.newItemId} (${renderOptions(p.options)})`).join('; ');
        const verb = exchange ? 'exchange' : 'modify';
        // Each item as the order details print it, then the variant it becomes: its options, then its item id.
        const note = pairs.map((p) => {
          const item = { name: p.name, product_id: p.productId, item_id: p.itemId }, to = { options: p.options, item_id: p.newItemId };
          const entries = this.walk ? variantEntries(this.productTexts.get(p.productId) ?? '', p.newItemId) : null;
          return entries ? walkNote(item, to, entries) : variantNote(item, to);
        }).join('\n');
        return { ...this.confirm(plan, `Here are the details: ${verb} in order ${id}: ${list}. The price difference will be settled with ${pm}. Please make sure these are all the items, since this can only be done once for the order.`), note };
      }
      case 'return': {
        if (order.status !== 'delivered') return this.refusal(plan, `I can't process a return for order ${id} because its status is '${order.status}'; only delivered orders can be returned.`, `I can't process a return for order ${id}.`, [order.status])!;
        const found = new Set(findNames(extractOrderDescription(plan.text).rest, order.items.map((i) => i.name)).map((f) => f.name));
        const items = order.items.filter((i) => found.has(i.name));
        if (items.length === 0) return this.ask(plan, 'Which items would you like to return?');
        const pm = this.paymentId(plan, order);
        if (!pm) return this.ask(plan, 'Which payment method should receive the refund: the original payment method or a gift card?');
        const original = order.payment_history[0]?.payment_method_id;
        if (pm !== original && this.user!.payment_methods[pm]?.source !== 'gift_card') {
          return this.refuse('a refund can only go to the original payment method or to a gift card.');
        }
        if (plan.confirmed) {
          const ids = items.map((i) => i.item_id);
          return this.write(plan, { name: 'return_delivered_order_items', arguments: { order_id: id, item_ids: ids, payment_method_id: pm } }, () => this.returnSlips(order, ids, pm));
        }
        // With the item walk: the order's items as printed up to the last one returned, then the ones returned.
        const walked = this.walkTo(order, Math.max(...items.map((i) => order.items.indexOf(i))), `${order.order_id} return`);
        if (walked !== null && typeof walked !== 'string') return walked;
        const list = items.map((i) => `${i.name} ${i.item_id}`).join(', ');
        const note = [...(walked === null ? [] : [walked]), ...items.map(itemNote)].join('\n');
        return { ...this.confirm(plan, `Here are the details: return from order ${id}: ${list}, with the refund going to ${pm}.`), note };
      }
    }
  }

  /** Mistaken item changes: another variant for one item (item_variant), another payment method (payment_method). */
  private itemSlips(order: OrderJson, pairs: readonly Pair[], pm: string, tool: string): SlipOptions<CallSpec> {
    const id = order.order_id;
    const itemPrice = (itemId: string) => order.items.find((i) => i.item_id === itemId)?.price ?? 0;
    const variantOf = (p: Pair) => this.products.get(order.items.find((i) => i.item_id === p.itemId)?.product_id ?? '');
    const newPrice = (p: Pair, itemId: string) => Object.values(variantOf(p)?.variants ?? {}).find((v) => v.item_id === itemId)?.price ?? 0;
    const diff = pairs.reduce((s, p) => s + newPrice(p, p.newItemId) - itemPrice(p.itemId), 0);
    const args = (newIds: string[], m: string) => ({ order_id: id, item_ids: pairs.map((p) => p.itemId), new_item_ids: newIds, payment_method_id: m });
    const variants: Slip<CallSpec>[] = [];
    pairs.forEach((p, k) => {
      const product = variantOf(p);
      if (!product) return;
      const target = product.variants[p.newItemId]?.options ?? p.options;
      const keys = Object.keys(target);
      const candidates = Object.values(product.variants).filter(
        (v) => v.available && v.item_id !== p.itemId && v.item_id !== p.newItemId && Object.keys(v.options).length === keys.length && this.canPay(pm, diff - newPrice(p, p.newItemId) + v.price),
      );
      // The nearest misses: the variants that differ from the wanted one in the fewest options.
      const score = (o: Record<string, string>) => keys.filter((key) => o[key] === target[key]).length;
      const best = Math.max(-1, ...candidates.map((v) => score(v.options)));
      for (const v of candidates.filter((c) => score(c.options) === best)) {
        const newIds = pairs.map((q) => q.newItemId);
        newIds[k] = v.item_id;
        variants.push({ detail: `${tool} ${id}: ${p.name} ${p.itemId} -> ${v.item_id} (${renderOptions(v.options)}) instead of ${p.newItemId} (${renderOptions(target)})`, value: { name: tool, arguments: args(newIds, pm) } });
      }
    });
    const payments = Object.keys(this.user!.payment_methods)
      .filter((m) => m !== pm && this.canPay(m, diff))
      .map((m) => ({ detail: `${tool} ${id}: price difference settled with ${m} instead of ${pm}`, value: { name: tool, arguments: args(pairs.map((p) => p.newItemId), m) } }));
    return { item_variant: variants, payment_method: payments };
  }

  /** Mistaken returns: the refund to the other allowed method (refund_method), other items (return_item). */
  private returnSlips(order: OrderJson, ids: readonly string[], pm: string): SlipOptions<CallSpec> {
    const id = order.order_id;
    const args = (itemIds: string[], m: string) => ({ name: 'return_delivered_order_items', arguments: { order_id: id, item_ids: itemIds, payment_method_id: m } });
    const original = order.payment_history[0]?.payment_method_id;
    const methods = this.user!.payment_methods;
    const refundTo =
      pm === original
        ? Object.values(methods).filter((m) => m.source === 'gift_card' && m.id !== original).map((m) => m.id)
        : methods[pm]?.source === 'gift_card' && original !== undefined && methods[original] !== undefined
          ? [original]
          : [];
    const inOrder = (list: string[]) => order.items.map((i) => i.item_id).filter((x) => list.includes(x));
    const others = order.items.map((i) => i.item_id).filter((x) => !ids.includes(x));
    const lists: { list: string[]; how: string }[] = [
      ...others.map((x) => ({ list: inOrder([...ids, x]), how: `also returned ${x}` })),
      ...(ids.length >= 2 ? ids.map((x) => ({ list: ids.filter((y) => y !== x), how: `left out ${x}` })) : []),
      ...ids.flatMap((x) => others.map((y) => ({ list: inOrder([...ids.filter((z) => z !== x), y]), how: `returned ${y} instead of ${x}` }))),
    ];
    return {
      refund_method: refundTo.map((m) => ({ detail: `return from order ${id}: refund to ${m} instead of ${pm}`, value: args([...ids], m) })),
      return_item: lists.map(({ list, how }) => ({ detail: `return from order ${id}: ${how}`, value: args(list, pm) })),
    };
  }

  private answer(plan: Plan, question: string): Step {
    if (question === 'order_count') {
      this.plan = null;
      const n = String(this.user!.orders.length);
      return this.reply(plan, `You have ${n} orders with us.`, "I'm sorry, but I can't count the orders on your account right now.", n);
    }
    if (question === 'gift_card_balance') {
      if (!plan.userRefreshed) return call('get_user_details', { user_id: this.userId! });
      const card = Object.values(this.user!.payment_methods).find((m) => m.source === 'gift_card');
      this.plan = null;
      if (!card || card.balance === undefined) return say(`I don't see a gift card on your account. ${ANYTHING_ELSE}`);
      const balance = formatMoney(card.balance);
      return this.reply(plan, `Your gift card ${card.id} has a balance of $${balance}.`, "I'm sorry, but I can't see the balance of your gift card right now.", balance);
    }
    const resolved = this.resolveOrder(plan);
    if (!('order_id' in resolved)) return resolved;
    const o = resolved;
    if (o.user_id !== this.userId) return this.refuse(`order ${o.order_id} does not belong to your account, so I can't share its details.`);
    this.plan = null;
    if (question === 'tracking_id') {
      const t = o.fulfillments[0]?.tracking_id[0];
      if (!t) return say(`Order ${o.order_id} has not shipped yet, so there is no tracking number. ${ANYTHING_ELSE}`);
      return this.reply(plan, `The tracking number of order ${o.order_id} is ${t}.`, `I'm sorry, but I couldn't find a tracking number for order ${o.order_id}.`, t);
    }
    if (question === 'order_status') return this.reply(plan, `Order ${o.order_id} is currently '${o.status}'.`, `I'm sorry, but I can't see the current status of order ${o.order_id} right now.`, o.status);
    const total = formatMoney(orderTotal(o.items));
    return this.reply(plan, `The total of order ${o.order_id} is $${total}.`, `I'm sorry, but I can't see the total of order ${o.order_id} right now.`, total);
  }

  private report(plan: Plan): Step {
    this.plan = null;
    if (plan.kind === 'human') return say(TRANSFER_MESSAGE);
    if (plan.writeOutput === null) return say(`The request could not be completed. ${ANYTHING_ELSE}`);
    const o = parseOrder(plan.writeOutput);
    const status = o?.status ? ` The order status is now '${o.status}'.` : '';
    return say(`Done.${status} ${ANYTHING_ELSE}`);
  }
}

export interface ExpertAgentOptions {
  /** The mistake knob (expert-mistakes.ts). Omitted: the perfect expert. */
  mistakes?: ExpertMistakeOptions;
  /**
   * Restate the request in the first reply ("I can help with that: you would like to cancel an order. First, …"; see
   * `restatement`). Off by default, so the conversations made before it stay the same, message for message.
   */
  restate?: boolean;
  /**
   * Notes: before the turns whose ids an agent must find in tool results far back, the expert writes the text it finds
   * them in as its chain of thought (`AgentTurn.reasoning`, harmony's analysis channel), in the tools' own JSON, so
   * that every id in the note follows the same tokens as where it was read, and the call or proposal after the note
   * copies from a few tokens back:
   * - before `get_product_details`: the order item, `{"name": "Smart Watch", "product_id": "…", "item_id": "…"}` (the
   *   name is the customer's; the ids follow it in the order details);
   * - before an exchange or modification proposal: each item so, then `-> {"options": {…}, "item_id": "…"}`, the
   *   options wanted and the variant's id;
   * - before a return proposal: each item returned, as above;
   * - on the `modify_user_address` write: `{"user_id": "…"}`, as the user details begin.
   * Off by default, so the conversations made before it stay the same, message for message.
   */
  notes?: boolean;
  /**
   * With `notes`: the note before an exchange or modification proposal walks the product's variants as printed, up to
   * the one with the options wanted (`walkNote`), so that the new variant's id is copied forwards rather than found
   * by the options printed after it. Off by default.
   */
  walk?: boolean;
  /**
   * With `notes`: the note before a product lookup for an exchange or modification walks the order's items as the
   * order details printed them, one per line, from the first up to the one the customer named (`itemEntries`), in
   * place of that item's text alone (`itemNote`). Each entry is then a forward copy of the printed text, and the choice
   * of the item by its name becomes where the walk stops; the lookup's product id is the last line's. The note before
   * a return proposal walks so up to the last item returned, then names the items returned (`itemNote`), a few lines
   * back. The walk starts at the first item of the last tool result: when another result came after the order's details
   * (another order read while finding it, another product's details), the expert reads the order again first.
   * `'printed'`: the entries joined as the order details print them (`, `), so the walk is the printed text itself from
   * the first item on (a verbatim substring: every token follows the tokens it follows there), not one entry a line.
   * Off by default.
   */
  itemWalk?: boolean | 'printed';
}

export class ExpertAgent implements SynthAgent {
  readonly name = 'expert';
  private readonly mistakes: ExpertMistakeOptions | null;
  private readonly restate: boolean;
  private readonly notes: boolean;
  private readonly walk: boolean;
  private readonly itemWalk: boolean | 'printed';

  constructor(options: ExpertAgentOptions = {}) {
    this.mistakes = options.mistakes ?? null;
    this.restate = options.restate ?? false;
    this.notes = options.notes ?? false;
    this.walk = options.walk ?? false;
    this.itemWalk = options.itemWalk ?? false;
    if (this.walk && !this.notes) throw new Error('ExpertAgent: walk writes notes; set notes: true as well');
    if (this.itemWalk && !this.notes) throw new Error('ExpertAgent: itemWalk writes notes; set notes: true as well');
    // Validate now, so a bad option fails when the agent is made rather than in its first episode.
    if (this.mistakes) new MistakeMaker(this.mistakes, new SynthRng(0));
  }

  /** The episode's mistakes are drawn from `context.seed`: the same seed gives the same episode. */
  start(context: AgentEpisodeContext): AgentSession {
    return new ExpertSession(this.mistakes ? new MistakeMaker(this.mistakes, new SynthRng(context.seed).fork('expert mistakes')) : null, this.restate, this.notes, this.walk, this.itemWalk);
  }
}

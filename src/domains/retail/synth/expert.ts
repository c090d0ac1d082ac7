/**
 * The expert: a deterministic, policy-following retail agent (no LLM). It reads the user's texts (through the shared
 * protocol of protocol.ts) and the tool results, authenticates by email or name + zip, looks up what it needs one
 * call at a time, refuses what the policy forbids, lists the details and waits for an explicit yes before every
 * write, makes one write per request, answers questions with the exact facts, and transfers when asked for a human.
 */
import type { Message } from '../../../tooluse/messages.ts';
import type { AgentTurn } from '../../../tooluse/orchestrator.ts';
import { TRANSFER_MESSAGE } from '../../../tooluse/user.ts';
import type { Address } from '../schema.ts';
import { ADDRESS_FIELDS } from '../schema.ts';
import type { AgentEpisodeContext, AgentSession, SynthAgent } from './agent.ts';
import { detectKind, isYes, ORDER_ID_IN_TEXT, parseIdentity, parsePaymentMention, parseReason, type ExpertKind, type IdentityDetails } from './expert-parse.ts';
import { parseOrder, parseProduct, parseUser, type OrderJson, type ProductJson, type UserJson } from './expert-records.ts';
import { formatMoney, orderTotal } from './facts.ts';
import { CONFIRM_MARKER, extractOrderDescription, findNames, parseAddress, parseOptions, renderAddress, renderOptions } from './protocol.ts';

const ANYTHING_ELSE = 'Is there anything else I can help you with?';

interface Pair {
  itemId: string;
  newItemId: string;
  name: string;
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
}

type Step = { call: { name: string; arguments: Record<string, unknown> } } | { say: string };

const call = (name: string, args: Record<string, unknown>): Step => ({ call: { name, arguments: args } });
const say = (text: string): Step => ({ say: text });

function addressArgs(a: Address): Record<string, string> {
  return Object.fromEntries(ADDRESS_FIELDS.map((f) => [f, a[f]]));
}

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
  private pending: { name: string; arguments: Record<string, unknown> } | null = null;
  private closingSent = false;

  act(observed: readonly Message[]): AgentTurn {
    for (const m of observed) {
      if (m.role === 'tool') this.onToolResult(m.content, m.error);
      else if (m.role === 'user' && typeof m.content === 'string') this.onUserText(m.content);
    }
    const step = this.decide();
    if ('call' in step) {
      this.pending = step.call;
      return { content: null, toolCalls: [step.call] };
    }
    return { content: step.say, toolCalls: null };
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
      this.plan = { kind, text, awaitingConfirmation: false, asked: false, confirmed: false, executed: false, writeOutput: null, userRefreshed: false };
      this.closingSent = false;
    } else if (this.plan) this.plan.text += '\n' + text;
  }

  private onToolResult(content: string, error: boolean): void {
    const c = this.pending;
    this.pending = null;
    if (!c) return;
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
        if (o) this.orders.set(o.order_id, o);
        else this.missingOrders.add(String(c.arguments.order_id));
        return;
      }
      case 'get_product_details': {
        const p = error ? null : parseProduct(content);
        if (p) this.products.set(p.product_id, p);
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
          if (o) this.orders.set(o.order_id, o);
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
      return say('I can help with that. First, could you please provide your email address, or your first and last name and zip code, so I can verify your identity?');
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
    for (const item of order.items) {
      const keys = Object.keys(item.options);
      let stated: Record<string, string> = {};
      found.forEach((f, k) => {
        if (f.name === item.name) stated = { ...stated, ...parseOptions(text.slice(f.at, found[k + 1]?.at ?? text.length), keys) };
      });
      if (Object.keys(stated).length === 0) continue;
      const product = this.products.get(item.product_id);
      if (!product) return call('get_product_details', { product_id: item.product_id });
      const wanted = { ...item.options, ...stated };
      const target = Object.values(product.variants).find((v) => keys.every((k) => v.options[k] === wanted[k]) && Object.keys(v.options).length === keys.length);
      if (!target || !target.available || target.item_id === item.item_id) {
        return this.refuse(`there is no other available ${item.name} with ${renderOptions(wanted)}.`);
      }
      pairs.push({ itemId: item.item_id, newItemId: target.item_id, name: item.name, options: target.options });
    }
    return pairs.length > 0 ? pairs : this.ask(plan, 'Which items would you like to change, and to which options?');
  }

  private ask(plan: Plan, question: string): Step {
    plan.asked = true;
    return say(question);
  }

  private confirm(plan: Plan, details: string): Step {
    plan.awaitingConfirmation = true;
    return say(`${details} Do you confirm that you want me to proceed ${CONFIRM_MARKER}?`);
  }

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
      if (plan.confirmed) return call('modify_user_address', { user_id: this.userId!, ...addressArgs(address) });
      return this.confirm(plan, `Here is the change: update your default address to ${renderAddress(address)}.`);
    }
    if (typeof kind === 'object') return this.answer(plan, kind.info);
    const resolved = this.resolveOrder(plan);
    if (!('order_id' in resolved)) return resolved;
    const order = resolved;
    const id = order.order_id;
    if (order.user_id !== this.userId) return this.refuse(`order ${id} does not belong to your account, so I can't help with it.`);
    switch (kind) {
      case 'cancel': {
        if (order.status !== 'pending') return this.refuse(`I can't cancel order ${id} because its status is '${order.status}'; only pending orders can be cancelled.`);
        const reason = parseReason(plan.text);
        if (reason === null) return this.ask(plan, "What is the reason for the cancellation: 'no longer needed' or 'ordered by mistake'?");
        if ('invalid' in reason) return this.refuse("an order can only be cancelled if it is no longer needed or was ordered by mistake, so I can't cancel it for that reason.");
        if (plan.confirmed) return call('cancel_pending_order', { order_id: id, reason: reason.valid });
        const items = order.items.map((i) => i.name).join(', ');
        return this.confirm(plan, `Here are the details: cancel order ${id} (${items}) with the reason '${reason.valid}'.`);
      }
      case 'modify_address': {
        if (order.status !== 'pending') return this.refuse(`I can't modify order ${id} because its status is '${order.status}'; only pending orders can be modified.`);
        const address = parseAddress(plan.text);
        if (!address) return this.ask(plan, 'What is the new shipping address?');
        if (plan.confirmed) return call('modify_pending_order_address', { order_id: id, ...addressArgs(address) });
        return this.confirm(plan, `Here is the change: set the shipping address of order ${id} to ${renderAddress(address)}.`);
      }
      case 'modify_payment': {
        if (order.status !== 'pending') return this.refuse(`I can't modify order ${id} because its status is '${order.status}'; only pending orders can be modified.`);
        const pm = this.paymentId(plan, order);
        if (!pm) return this.ask(plan, 'Which payment method would you like to use instead?');
        if (plan.confirmed) return call('modify_pending_order_payment', { order_id: id, payment_method_id: pm });
        return this.confirm(plan, `Here is the change: pay for order ${id} with the payment method ${pm}; the original payment will be refunded.`);
      }
      case 'modify_items':
      case 'exchange': {
        const exchange = kind === 'exchange';
        const required = exchange ? 'delivered' : 'pending';
        if (order.status !== required) {
          return this.refuse(`I can't ${exchange ? 'exchange items of' : 'modify'} order ${id} because its status is '${order.status}'; only ${required} orders can be ${exchange ? 'exchanged' : 'modified'}.`);
        }
        const pairs = this.changes(plan, order);
        if (!Array.isArray(pairs)) return pairs;
        const pm = this.paymentId(plan, order);
        if (!pm) return this.ask(plan, 'Which payment method would you like to use for the price difference?');
        const args = { order_id: id, item_ids: pairs.map((p) => p.itemId), new_item_ids: pairs.map((p) => p.newItemId), payment_method_id: pm };
        if (plan.confirmed) return call(exchange ? 'exchange_delivered_order_items' : 'modify_pending_order_items', args);
        const list = pairs.map((p) => `${p.name} ${p.itemId} -> ${p.newItemId} (${renderOptions(p.options)})`).join('; ');
        const verb = exchange ? 'exchange' : 'modify';
        return this.confirm(plan, `Here are the details: ${verb} in order ${id}: ${list}. The price difference will be settled with ${pm}. Please make sure these are all the items, since this can only be done once for the order.`);
      }
      case 'return': {
        if (order.status !== 'delivered') return this.refuse(`I can't process a return for order ${id} because its status is '${order.status}'; only delivered orders can be returned.`);
        const found = new Set(findNames(extractOrderDescription(plan.text).rest, order.items.map((i) => i.name)).map((f) => f.name));
        const items = order.items.filter((i) => found.has(i.name));
        if (items.length === 0) return this.ask(plan, 'Which items would you like to return?');
        const pm = this.paymentId(plan, order);
        if (!pm) return this.ask(plan, 'Which payment method should receive the refund: the original payment method or a gift card?');
        const original = order.payment_history[0]?.payment_method_id;
        if (pm !== original && this.user!.payment_methods[pm]?.source !== 'gift_card') {
          return this.refuse('a refund can only go to the original payment method or to a gift card.');
        }
        if (plan.confirmed) return call('return_delivered_order_items', { order_id: id, item_ids: items.map((i) => i.item_id), payment_method_id: pm });
        const list = items.map((i) => `${i.name} ${i.item_id}`).join(', ');
        return this.confirm(plan, `Here are the details: return from order ${id}: ${list}, with the refund going to ${pm}.`);
      }
    }
  }

  private answer(plan: Plan, question: string): Step {
    if (question === 'order_count') {
      this.plan = null;
      return say(`You have ${this.user!.orders.length} orders with us. ${ANYTHING_ELSE}`);
    }
    if (question === 'gift_card_balance') {
      if (!plan.userRefreshed) return call('get_user_details', { user_id: this.userId! });
      const card = Object.values(this.user!.payment_methods).find((m) => m.source === 'gift_card');
      this.plan = null;
      if (!card || card.balance === undefined) return say(`I don't see a gift card on your account. ${ANYTHING_ELSE}`);
      return say(`Your gift card ${card.id} has a balance of $${formatMoney(card.balance)}. ${ANYTHING_ELSE}`);
    }
    const resolved = this.resolveOrder(plan);
    if (!('order_id' in resolved)) return resolved;
    const o = resolved;
    if (o.user_id !== this.userId) return this.refuse(`order ${o.order_id} does not belong to your account, so I can't share its details.`);
    this.plan = null;
    if (question === 'tracking_id') {
      const t = o.fulfillments[0]?.tracking_id[0];
      return say(t ? `The tracking number of order ${o.order_id} is ${t}. ${ANYTHING_ELSE}` : `Order ${o.order_id} has not shipped yet, so there is no tracking number. ${ANYTHING_ELSE}`);
    }
    if (question === 'order_status') return say(`Order ${o.order_id} is currently '${o.status}'. ${ANYTHING_ELSE}`);
    return say(`The total of order ${o.order_id} is $${formatMoney(orderTotal(o.items))}. ${ANYTHING_ELSE}`);
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

export class ExpertAgent implements SynthAgent {
  readonly name = 'expert';
  start(_context: AgentEpisodeContext): AgentSession {
    return new ExpertSession();
  }
}

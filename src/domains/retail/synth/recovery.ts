/**
 * Slips and recoveries: a demonstrator that sometimes makes the kind of read call a weak model makes — an id with one
 * digit wrong, another id from the conversation, an item id where a product id belongs, an email or zip with one
 * character off — gets the tool's answer (τ²'s error string, or the record of another order or product) and then
 * makes the call it meant to make.
 *
 * This is noise injection into the demonstrator (DART, Laskey et al. 2017, arXiv 1703.09327): an agent trained only
 * on a perfect expert's trajectories has never seen a state reached by an error, and a small model in such a state
 * derails. Here the slipped call is in the context and out of the loss (the episode runner lists it in
 * `Trajectory.contextOnly`), and the recovery that follows is in it. Only reads slip, so the final database — and the
 * τ² reward — is the inner agent's; a slip costs one tool error at most.
 *
 * The inner agent never sees a slip: the wrapper holds the inner agent's intended call, answers its own slip's tool
 * result by sending that call, and passes on everything else unchanged, so the inner agent plays its own episode.
 */
import type { Message } from '../../../tooluse/messages.ts';
import type { AgentToolCall, AgentTurn } from '../../../tooluse/orchestrator.ts';
import type { AgentEpisodeContext, AgentNotes, AgentSession, SlipRecord, SynthAgent } from './agent.ts';
import { FIRST_NAMES, LAST_NAMES } from './catalog-data.ts';
import { allMatches, CONFIRM_MARKER, ORDER_ID_PATTERN, PAYMENT_ID_PATTERN } from './protocol.ts';
import { SynthRng } from './rng.ts';

export interface RecoveryOptions {
  /** Probability that a read call slips first, in [0, 1]. */
  rate: number;
  /** Most slips in one episode (default 2; τ²'s episodes end at 10 tool errors). */
  maxPerEpisode?: number;
  /**
   * Also slip on the name of a `find_user_id_by_name_zip` call: another first or last name of the generator's lists,
   * one with the same initial where there is one (a small model that copies a name's first letter and guesses the
   * rest writes "Hana" for "Henry"). Off by default, so streams made before it stay the same.
   */
  names?: boolean;
  /**
   * Let the identity lookups (`find_user_id_by_email`, `find_user_id_by_name_zip`) slip (default true). Off, a
   * "User not found" is only ever followed by what the expert does after a lookup of a user who does not exist: it
   * asks the customer for the other identity, and gives up after a second failure. A model that learnt "after 'User
   * not found', call again with the right value" from identity slips repeats the failing lookup on every failed_auth
   * task, where the value it was given is the right one.
   */
  identity?: boolean;
  /**
   * Also slip on confirmation proposals: before the proposal the inner agent means to make, a wrong one goes out (the
   * exchange and modify verbs swapped, an order id one digit off, or another payment method of the conversation), the
   * customer says no and restates the request, and the right proposal follows. Off by default, so streams made before
   * it stay the same draw for draw. It demonstrates the turn after a rejected proposal, which the expert never reaches.
   */
  proposals?: boolean;
}

const IDENTITY_LOOKUPS = ['find_user_id_by_email', 'find_user_id_by_name_zip'];

/** The read tools that may slip (writes never do: a slipped write would change the database). */
export const SLIPPING_TOOLS = ['find_user_id_by_email', 'find_user_id_by_name_zip', 'get_user_details', 'get_order_details', 'get_product_details'] as const;


const TEN_DIGITS = /\b\d{10}\b/g;

/** The string with the character at a random position of class `re` replaced by another of its class. */
function changeOne(rng: SynthRng, s: string, re: RegExp, alphabet: string): string | null {
  const at: number[] = [];
  for (let i = 0; i < s.length; i++) if (re.test(s[i]!)) at.push(i);
  if (at.length === 0) return null;
  const i = rng.pick(at);
  const others = [...alphabet].filter((c) => c !== s[i]);
  return s.slice(0, i) + rng.pick(others) + s.slice(i + 1);
}

const digitOff = (rng: SynthRng, s: string) => changeOne(rng, s, /[0-9]/, '0123456789');
const letterOff = (rng: SynthRng, s: string) => changeOne(rng, s, /[a-z]/, 'abcdefghijklmnopqrstuvwxyz');

/** Another name of `names`, with the same initial as `name` where the list has one. */
function otherName(rng: SynthRng, name: string, names: readonly string[]): string | null {
  const others = names.filter((n) => n !== name);
  if (others.length === 0) return null;
  const same = others.filter((n) => n[0] === name[0]);
  return rng.pick(same.length > 0 ? same : others);
}

/** A wrong version of a confirmation proposal the customer will reject, or null when none applies. */
export function wrongProposal(rng: SynthRng, text: string, payments: ReadonlySet<string>): { text: string; detail: string } | null {
  const options: { text: string; detail: string }[] = [];
  const verb = /Here are the details: (exchange|modify) in order/.exec(text);
  if (verb) {
    const other = verb[1] === 'exchange' ? 'modify' : 'exchange';
    options.push({ text: text.replace(verb[0], `Here are the details: ${other} in order`), detail: `${other} for ${verb[1]}` });
  }
  const order = allMatches(text, ORDER_ID_PATTERN)[0];
  if (order) {
    const off = digitOff(rng, order.slice(2));
    if (off !== null) options.push({ text: text.replaceAll(order, `#W${off}`), detail: `order #W${off} for ${order}` });
  }
  const pm = allMatches(text, PAYMENT_ID_PATTERN)[0];
  const others = [...payments].filter((p) => p !== pm);
  if (pm && others.length > 0) {
    const other = rng.pick(others);
    options.push({ text: text.replaceAll(pm, other), detail: `payment ${other} for ${pm}` });
  }
  return options.length === 0 ? null : rng.pick(options);
}

/** Candidate wrong versions of a read call, given the ids seen so far in tool results. */
function slips(rng: SynthRng, c: AgentToolCall, seen: { orders: Set<string>; tenDigit: Set<string>; itemIds: Set<string> }, names: boolean): { call: AgentToolCall; detail: string }[] {
  const args = (typeof c.arguments === 'object' && c.arguments !== null ? c.arguments : {}) as Record<string, unknown>;
  const out: { call: AgentToolCall; detail: string }[] = [];
  const withArg = (key: string, value: string | null, why: string) => {
    if (value === null || value === args[key]) return;
    out.push({ call: { name: c.name, arguments: { ...args, [key]: value } }, detail: `${c.name} with ${key} ${JSON.stringify(value)} (${why}) before ${JSON.stringify(args[key])}` });
  };
  const str = (key: string): string | null => (typeof args[key] === 'string' ? (args[key] as string) : null);
  switch (c.name) {
    case 'find_user_id_by_email': {
      const email = str('email');
      if (email === null) break;
      const [local, domain] = [email.slice(0, email.indexOf('@')), email.slice(email.indexOf('@'))];
      const off = /\d/.test(local) ? digitOff(rng, local) : letterOff(rng, local);
      withArg('email', off === null ? null : off + domain, 'one character off');
      break;
    }
    case 'find_user_id_by_name_zip': {
      const zip = str('zip');
      if (zip !== null) withArg('zip', digitOff(rng, zip), 'one digit off');
      if (names) {
        const first = str('first_name');
        const last = str('last_name');
        if (first !== null) withArg('first_name', otherName(rng, first, FIRST_NAMES), 'another first name');
        if (last !== null) withArg('last_name', otherName(rng, last, LAST_NAMES), 'another last name');
      }
      break;
    }
    case 'get_user_details': {
      const id = str('user_id');
      if (id !== null) withArg('user_id', digitOff(rng, id), 'one digit off');
      break;
    }
    case 'get_order_details': {
      const id = str('order_id');
      if (id === null) break;
      withArg('order_id', digitOff(rng, id), 'one digit off');
      const other = [...seen.orders].filter((o) => o !== id);
      if (other.length > 0) withArg('order_id', rng.pick(other), 'another order of the conversation');
      break;
    }
    case 'get_product_details': {
      const id = str('product_id');
      if (id === null) break;
      withArg('product_id', digitOff(rng, id), 'one digit off');
      const items = [...seen.itemIds].filter((i) => i !== id);
      if (items.length > 0) withArg('product_id', rng.pick(items), 'an item id, not a product id');
      const other = [...seen.tenDigit].filter((p) => p !== id && !seen.itemIds.has(p));
      if (other.length > 0) withArg('product_id', rng.pick(other), 'another product of the conversation');
      break;
    }
  }
  return out;
}

class RecoverySession implements AgentSession {
  private turn = 0;
  /** The inner agent's call held back while its slip is answered. */
  private held: AgentTurn | null = null;
  private readonly records: SlipRecord[] = [];
  private readonly seen = { orders: new Set<string>(), tenDigit: new Set<string>(), itemIds: new Set<string>(), payments: new Set<string>() };

  constructor(private readonly inner: AgentSession, private readonly rng: SynthRng, private readonly rate: number, private readonly max: number, private readonly names: boolean, private readonly identity: boolean, private readonly proposals: boolean) {}

  act(observed: readonly Message[]): AgentTurn {
    const turn = this.turn++;
    for (const m of observed) if (m.role === 'tool') this.read(m.content);
    if (this.held) {
      // `observed` answers the slip: the inner agent does not see it, and gets its own call's answer next.
      const held = this.held;
      this.held = null;
      return held;
    }
    const next = this.inner.act(observed);
    const calls = next.toolCalls ?? [];
    if (this.proposals && this.records.length < this.max && calls.length === 0 && typeof next.content === 'string' && next.content.includes(CONFIRM_MARKER)) {
      if (!this.rng.chance(this.rate)) return next;
      const wrong = wrongProposal(this.rng, next.content, this.seen.payments);
      if (wrong === null) return next;
      this.records.push({ turn, detail: `proposal with ${wrong.detail}` });
      this.held = next;
      return { content: wrong.text, toolCalls: null };
    }
    if (this.records.length >= this.max || calls.length !== 1 || !(SLIPPING_TOOLS as readonly string[]).includes(calls[0]!.name)) return next;
    // Checked before the draw below: with identity slips on (the default) the draws are the earlier streams', one for one.
    if (!this.identity && IDENTITY_LOOKUPS.includes(calls[0]!.name)) return next;
    if (!this.rng.chance(this.rate)) return next;
    const options = slips(this.rng, calls[0]!, this.seen, this.names);
    if (options.length === 0) return next;
    const slip = this.rng.pick(options);
    this.records.push({ turn, detail: slip.detail });
    this.held = next;
    return { content: null, toolCalls: [slip.call] };
  }

  notes(): AgentNotes | undefined {
    const inner = this.inner.notes?.();
    if (this.records.length === 0 && !inner) return undefined;
    return { mistakes: inner?.mistakes ?? [], mistakeOpportunities: inner?.mistakeOpportunities ?? 0, slips: this.records.map((r) => ({ ...r })) };
  }

  private read(content: string): void {
    for (const id of allMatches(content, ORDER_ID_PATTERN)) this.seen.orders.add(id);
    for (const id of content.match(TEN_DIGITS) ?? []) this.seen.tenDigit.add(id);
    for (const m of content.matchAll(/"item_id":\s*"(\d{10})"/g)) this.seen.itemIds.add(m[1]!);
    if (this.proposals) for (const id of allMatches(content, PAYMENT_ID_PATTERN)) this.seen.payments.add(id);
  }
}

/** `inner` with slips and recoveries at `rate` (see the file comment). The slips are drawn from the episode seed. */
export class RecoveringAgent implements SynthAgent {
  readonly name: string;
  private readonly max: number;
  private readonly names: boolean;
  private readonly identity: boolean;
  private readonly proposals: boolean;

  constructor(private readonly inner: SynthAgent, private readonly options: RecoveryOptions) {
    const { rate, maxPerEpisode = 2, names = false, identity = true, proposals = false } = options;
    if (typeof rate !== 'number' || !Number.isFinite(rate) || rate < 0 || rate > 1) throw new Error(`recovery rate must be a number in [0, 1], got ${String(rate)}`);
    if (!Number.isInteger(maxPerEpisode) || maxPerEpisode < 1) throw new Error(`recovery maxPerEpisode must be a positive integer, got ${String(maxPerEpisode)}`);
    this.max = maxPerEpisode;
    this.names = names;
    this.identity = identity;
    this.proposals = proposals;
    this.name = inner.name;
  }

  start(context: AgentEpisodeContext): AgentSession {
    return new RecoverySession(this.inner.start(context), new SynthRng(context.seed).fork('recovery slips'), this.options.rate, this.max, this.names, this.identity, this.proposals);
  }
}

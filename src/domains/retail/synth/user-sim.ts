/**
 * The scripted user: a deterministic `UserSimulator` that plays a generated task from its structured scenario. It sees
 * only the agent's texts (as τ²'s user does), reveals identity details only when asked, states one request at a
 * time in seeded templated phrasings, confirms a proposed action only when it matches its goal, answers questions
 * about missing details, and ends with `###STOP###` (or `###TRANSFER###` after a hand-off). Any agent text is handled
 * without throwing, and the episode ends after a bounded number of turns. By default, like τ²'s simulated user, it
 * turns down a wrong proposal and states its request again as often as one comes; `maxRefusals` makes it leave instead.
 */
import type { Task } from '../../../tooluse/tasks.ts';
import type { UserEpisodeContext, UserSession, UserSimulator, UserViewTurn } from '../../../tooluse/user.ts';
import { STOP_TOKEN, TRANSFER_MESSAGE, TRANSFER_TOKEN } from '../../../tooluse/user.ts';
import { ADDRESS_FIELDS } from '../schema.ts';
import { allMatches, CATALOG_ID_PATTERN, CONFIRM_MARKER, ORDER_ID_PATTERN, PAYMENT_ID_PATTERN } from './protocol.ts';
import { SynthRng } from './rng.ts';
import { changesMind, initialVersion, type SynthRequest, type SynthScenario } from './scenario.ts';
import {
  CHANGE_OF_MIND,
  CLOSINGS,
  GIVING_UP,
  GREETINGS,
  identityReply,
  NEXT_PREFIXES,
  NO_REPLIES,
  orderRefText,
  paymentSentence,
  reasonSentence,
  requestStatement,
  YES_REPLIES,
} from './user-phrasing.ts';

export interface ScriptedUserOptions {
  /** User turns before it gives up with `###STOP###` (default 40). */
  maxTurns?: number;
  /** Agent messages in a row it cannot make sense of before it gives up (default 4). */
  maxConfused?: number;
  /**
   * Proposals it turns down before it leaves (`###STOP###` with the last refusal); default: never leaves for that.
   * A proposal of the request's first version by a user who changes its mind is not a refusal. A training option
   * (`retail.tasks.trainMaxRefusals` in a run file): the loops of wrong proposals end early, the evaluation keeps the
   * patient user.
   */
  maxRefusals?: number;
}

/** The scenario of a task: the task's own `longrun` field, or the entry for its id in a side map. */
export function scenarioOf(task: Task, side?: ReadonlyMap<string, SynthScenario>): SynthScenario | undefined {
  const own = (task as { longrun?: unknown }).longrun;
  if (own && typeof own === 'object' && (own as SynthScenario).version === 1) return own as SynthScenario;
  return side?.get(task.id);
}

const REFUSAL = /\b(sorry|unable|can't|cannot|couldn't|not able)\b/i;
const ASKS_IDENTITY = /\bemail\b|\bzip\b/i;

const sameSet = (a: readonly string[], b: readonly string[]): boolean => {
  const sa = new Set(a);
  const sb = new Set(b);
  return sa.size === sb.size && [...sa].every((x) => sb.has(x));
};

/** Whether a confirmation question proposes exactly the action this request asks for. */
export function proposalMatches(r: SynthRequest, text: string): boolean {
  const lower = text.toLowerCase();
  const orders = allMatches(text, ORDER_ID_PATTERN);
  const catalog = allMatches(text, CATALOG_ID_PATTERN);
  const payments = allMatches(text, PAYMENT_ID_PATTERN);
  const hasAddress = (a: Record<string, string>) => ADDRESS_FIELDS.every((f) => a[f] === '' || text.includes(a[f]!));
  switch (r.kind) {
    case 'cancel':
      return /cancel/.test(lower) && sameSet(orders, [r.order.orderId]) && catalog.length === 0 && payments.length === 0 && lower.includes(r.reason);
    case 'modify_items':
    case 'exchange': {
      const verbOk = r.kind === 'exchange' ? /exchange/.test(lower) : /modif/.test(lower) && !/exchange/.test(lower);
      const ids = [...r.changes.map((c) => c.itemId), ...r.changes.map((c) => c.newItemId)];
      return verbOk && sameSet(orders, [r.order.orderId]) && sameSet(catalog, ids) && sameSet(payments, [r.payment.paymentMethodId]);
    }
    case 'return':
      return /return/.test(lower) && sameSet(orders, [r.order.orderId]) && sameSet(catalog, r.items.map((i) => i.itemId)) && sameSet(payments, [r.payment.paymentMethodId]);
    case 'modify_address':
      return /shipping address/.test(lower) && sameSet(orders, [r.order.orderId]) && catalog.length === 0 && hasAddress({ ...r.address });
    case 'modify_payment':
      return /payment method/.test(lower) && sameSet(orders, [r.order.orderId]) && sameSet(payments, [r.payment.paymentMethodId]);
    case 'modify_user_address':
      return /default address/.test(lower) && orders.length === 0 && hasAddress({ ...r.address });
    case 'info':
    case 'human':
      return false;
  }
}

/** A scripted session answers synchronously. */
export interface ScriptedUserSession extends UserSession {
  respond(conversation: readonly UserViewTurn[]): string;
}

class ScriptedSession implements ScriptedUserSession {
  private readonly rng: SynthRng;
  private index = 0;
  private confirmed = false;
  private turns = 0;
  private confused = 0;
  private gaveEmail = false;
  private over = false;
  /** Whether the user already changed its mind about the current request (see `SynthRequest.droppedChange`). */
  private revised = false;
  private refusals = 0;

  constructor(
    private readonly s: SynthScenario,
    seed: number,
    private readonly maxTurns: number,
    private readonly maxConfused: number,
    private readonly maxRefusals: number,
  ) {
    this.rng = new SynthRng((s.styleSeed ^ Math.imul(seed | 0, 0x9e3779b1)) >>> 0);
  }

  respond(conversation: readonly UserViewTurn[]): string {
    if (this.over) return STOP_TOKEN;
    this.turns++;
    const agentTurns = conversation.filter((t) => t.role === 'user');
    const last = agentTurns[agentTurns.length - 1]?.content ?? '';
    const text = typeof last === 'string' ? last : '';
    if (this.turns === 1) return `${this.rng.pick(GREETINGS)} ${this.statement()}`;
    if (this.turns > this.maxTurns) return this.stop("I have to go now, I'll call back later.");
    if (text.includes(TRANSFER_MESSAGE)) return this.end(TRANSFER_TOKEN);
    const reply = this.s.authenticates ? this.reply(text) : this.replyUnauthenticated(text);
    if (reply !== null) {
      this.confused = 0;
      return reply;
    }
    if (++this.confused >= this.maxConfused) return this.stop("Sorry, I don't think we're getting anywhere.");
    return this.rng.chance(0.5) ? `Sorry, I don't follow. ${this.statement()}` : this.statement();
  }

  private get request(): SynthRequest | undefined {
    return this.s.requests[this.index];
  }

  private statement(): string {
    const r = this.request;
    if (!r) return 'That is all I need.';
    return requestStatement(this.revised ? r : initialVersion(r), this.rng);
  }

  private identity(): string {
    const byEmail = this.s.identity.knowsEmail && !this.gaveEmail;
    if (byEmail) this.gaveEmail = true;
    return identityReply(this.s.identity, byEmail, this.rng);
  }

  private end(token: string): string {
    this.over = true;
    return token;
  }

  private stop(words: string): string {
    return this.end(`${words} ${STOP_TOKEN}`);
  }

  private next(): string {
    this.index++;
    this.confirmed = false;
    this.revised = false;
    if (!this.request) return this.stop(this.rng.pick(CLOSINGS));
    return `${this.rng.pick(NEXT_PREFIXES)} ${this.statement()}`;
  }

  /** Without a matching account nothing can happen: give details when asked, leave once the agent gives up. */
  private replyUnauthenticated(text: string): string | null {
    if (ASKS_IDENTITY.test(text)) return this.identity();
    if (REFUSAL.test(text)) return this.stop("Okay, I'll try again later.");
    return null;
  }

  private reply(text: string): string | null {
    const r = this.request;
    if (!r) return this.stop(this.rng.pick(CLOSINGS));
    if (text.includes(CONFIRM_MARKER)) {
      if (proposalMatches(r, text)) {
        this.confirmed = true;
        return this.rng.pick(YES_REPLIES);
      }
      if (!this.revised && changesMind(r) && proposalMatches(initialVersion(r), text)) {
        this.revised = true;
        return `${this.rng.pick(CHANGE_OF_MIND)} ${this.statement()}`;
      }
      this.revised = true;
      if (++this.refusals >= this.maxRefusals) return this.stop(`${this.rng.pick(NO_REPLIES)} ${this.rng.pick(GIVING_UP)}`);
      return `${this.rng.pick(NO_REPLIES)} ${this.statement()}`;
    }
    if (ASKS_IDENTITY.test(text)) return this.identity();
    // After a confirmed action, the agent's next message reports it: move on.
    if (this.confirmed) return this.next();
    if (r.kind === 'info' && text.replaceAll(',', '').toLowerCase().includes(r.answer.toLowerCase())) return this.next();
    if (REFUSAL.test(text)) return this.next();
    if (/\breason\b/i.test(text)) return reasonSentence(r, this.rng);
    if (/payment method|refund/i.test(text)) return paymentSentence(r, this.rng);
    if (/which order|order id|order number/i.test(text) && 'order' in r && r.order) return `It's ${orderRefText(r.order, this.rng)}.`;
    return null;
  }
}

export class ScriptedRetailUser implements UserSimulator {
  readonly name = 'scripted';
  private readonly maxTurns: number;
  private readonly maxConfused: number;
  private readonly maxRefusals: number;

  /** `scenarios`: side map by task id, for tasks whose `longrun` field was dropped (e.g. parsed by the τ² loader). */
  constructor(
    private readonly scenarios?: ReadonlyMap<string, SynthScenario>,
    options: ScriptedUserOptions = {},
  ) {
    this.maxTurns = options.maxTurns ?? 40;
    this.maxConfused = options.maxConfused ?? 4;
    this.maxRefusals = options.maxRefusals ?? Infinity;
    if (!(this.maxTurns >= 2) || !(this.maxConfused >= 1)) throw new Error('maxTurns must be at least 2 and maxConfused at least 1');
    if (!(this.maxRefusals >= 1)) throw new Error(`maxRefusals must be at least 1 (got ${options.maxRefusals})`);
  }

  start(context: UserEpisodeContext): ScriptedUserSession {
    const scenario = scenarioOf(context.task, this.scenarios);
    if (!scenario) throw new Error(`Task ${context.task.id} has no synthetic scenario (no 'longrun' field and no entry in the scenario map)`);
    return new ScriptedSession(scenario, context.seed, this.maxTurns, this.maxConfused, this.maxRefusals);
  }
}

/**
 * help-desk: a small custom domain for longrun, in one file — tools over an in-memory ticket database, tasks from a
 * seeded generator (splits train / val / test), a final-state reward and a demonstrator that plays the gold turns.
 *
 * A task is one customer message: `Customer C27 writes about "login fails": make it urgent.` The agent looks the
 * ticket up by customer and subject (`find_ticket`), changes it (sets its priority, closes it, or escalates it to a
 * team), then says what it did. The reward is 1 when the final database equals the one the gold actions lead to
 * (τ²-style state match), else 0: changing the wrong ticket, or the right one in the wrong way, scores 0.
 * `find_customer` (by email) and `list_tickets` are there too; these tasks do not need them.
 *
 * Load it with `longrun rollout --env ./env.ts`, or from a run file: `env: { module: ./env.ts }`. The export `costly`
 * (`--env ./env.ts:costly`) is the variant whose reward charges for calls the demonstrations make and do not need.
 */
import { z } from 'zod';
import { defineEnv, rewards, tool, type Task } from 'longrun';

// ---- the database ------------------------------------------------------------------------------------------------

const PRIORITIES = ['low', 'normal', 'high', 'urgent'] as const;
const TEAMS = ['billing', 'engineering', 'security'] as const;
const NAMES = ['ana', 'ben', 'cara', 'dev', 'eli', 'fay', 'gus', 'hana', 'ivo', 'june', 'kai', 'lea', 'max', 'nia', 'omar', 'pia', 'ravi', 'sue', 'tom', 'uma'];
const DOMAINS = ['acme.io', 'globex.com', 'initech.net', 'umbrella.org'];
const SUBJECTS = ['login fails', 'invoice wrong', 'app crashes', 'slow sync', 'export broken', 'password reset', 'missing data', 'refund request', 'double charge', 'cannot upload'];

type Priority = (typeof PRIORITIES)[number];
type Team = (typeof TEAMS)[number];

interface Customer { id: string; email: string }
interface Ticket { id: string; customer: string; subject: string; status: 'open' | 'closed' | 'escalated'; priority: Priority; team: Team | null }
interface Db { customers: Customer[]; tickets: Ticket[] }

/** mulberry32: a small seeded generator, so a world seed always makes the same database. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = <X>(r: () => number, xs: readonly X[]): X => xs[Math.floor(r() * xs.length)]!;
function sample<X>(r: () => number, xs: readonly X[], n: number): X[] {
  const pool = [...xs];
  const out: X[] = [];
  while (out.length < n) out.push(pool.splice(Math.floor(r() * pool.length), 1)[0]!);
  return out;
}

/** Five customers with two or three open tickets each; ids are unique within the world. */
function makeWorld(worldSeed: number): Db {
  const r = rng(worldSeed);
  const emails = sample(r, NAMES, 5).map((n) => `${n}@${pick(r, DOMAINS)}`);
  const ids = sample(r, Array.from({ length: 90 }, (_, i) => i + 10), 15);
  const customers: Customer[] = emails.map((email, i) => ({ id: `C${ids[i]}`, email }));
  const tickets: Ticket[] = [];
  let next = Math.floor(r() * 80) + 10;
  for (const c of customers) {
    for (const subject of sample(r, SUBJECTS, 2 + Math.floor(r() * 2))) {
      tickets.push({ id: `T${next}`, customer: c.id, subject, status: 'open', priority: pick(r, ['low', 'normal', 'high'] as const), team: null });
      next += 1 + Math.floor(r() * 3);
    }
  }
  return { customers, tickets };
}

// ---- tasks -------------------------------------------------------------------------------------------------------

type Family = 'priority' | 'close' | 'escalate';

export interface HelpDeskTask extends Task {
  family: Family;
  worldSeed: number;
  /** The customer's message: the first (and only) user message. */
  prompt: string;
  /** The actions a perfect agent takes, replayed by the reward on a fresh database. */
  gold: { name: string; arguments: Record<string, unknown> }[];
}

const SPLITS: Record<string, { count: number; seedBase: number }> = {
  train: { count: 2000, seedBase: 1_000 },
  val: { count: 32, seedBase: 50_000 },
  test: { count: 48, seedBase: 90_000 },
};

function makeTask(split: string, i: number, worldSeed: number): HelpDeskTask {
  const r = rng(worldSeed ^ 0x9e3779b9);
  const db = makeWorld(worldSeed);
  const customer = pick(r, db.customers);
  const ticket = pick(r, db.tickets.filter((t) => t.customer === customer.id));
  const family = pick(r, ['priority', 'close', 'escalate'] as const);
  const lookups = [{ name: 'find_ticket', arguments: { customer_id: customer.id, subject: ticket.subject } }];
  const head = `Customer ${customer.id} writes about "${ticket.subject}":`;
  if (family === 'priority') {
    const priority = pick(r, PRIORITIES.filter((p) => p !== ticket.priority));
    return { id: `${split}-${i}`, family, worldSeed, prompt: `${head} make it ${priority}.`, gold: [...lookups, { name: 'set_priority', arguments: { ticket_id: ticket.id, priority } }] };
  }
  if (family === 'close') {
    return { id: `${split}-${i}`, family, worldSeed, prompt: `${head} it is solved, close it.`, gold: [...lookups, { name: 'close_ticket', arguments: { ticket_id: ticket.id } }] };
  }
  const team = pick(r, TEAMS);
  return { id: `${split}-${i}`, family, worldSeed, prompt: `${head} escalate it to ${team}.`, gold: [...lookups, { name: 'escalate_ticket', arguments: { ticket_id: ticket.id, team } }] };
}

/** The split's tasks: each task is its own world (its seed is distinct across splits). */
export function helpDeskTasks(split: string): HelpDeskTask[] {
  const s = SPLITS[split];
  if (!s) throw new Error(`help-desk: no split '${split}' (splits: ${Object.keys(SPLITS).join(', ')})`);
  return Array.from({ length: s.count }, (_, i) => makeTask(split, i, s.seedBase + i));
}

// ---- tools -------------------------------------------------------------------------------------------------------

function findTicket(db: Db, id: string): Ticket {
  const t = db.tickets.find((x) => x.id === id);
  if (!t) throw new Error(`no ticket ${id}`);
  return t;
}
function openTicket(db: Db, id: string): Ticket {
  const t = findTicket(db, id);
  if (t.status !== 'open') throw new Error(`ticket ${id} is ${t.status}`);
  return t;
}

const ticketId = z.string().describe('a ticket id, e.g. T42');

const tools = [
  tool({
    name: 'find_customer',
    description: 'Find a customer by email.',
    parameters: z.object({ email: z.string() }),
    kind: 'read',
    run: ({ email }, { state }: { state: Db }) => {
      const c = state.customers.find((x) => x.email === email.trim().toLowerCase());
      if (!c) throw new Error(`no customer with email ${email}`);
      return { email: c.email, id: c.id };
    },
  }),
  tool({
    name: 'list_tickets',
    description: "List a customer's tickets.",
    parameters: z.object({ customer_id: z.string() }),
    kind: 'read',
    run: ({ customer_id }, { state }: { state: Db }) => {
      if (!state.customers.some((c) => c.id === customer_id)) throw new Error(`no customer ${customer_id}`);
      return state.tickets.filter((t) => t.customer === customer_id).map(({ id, subject, status, priority }) => ({ subject, id, status, priority }));
    },
  }),
  tool({
    name: 'find_ticket',
    description: "Find a customer's ticket by its subject.",
    parameters: z.object({ customer_id: z.string(), subject: z.string() }),
    kind: 'read',
    run: ({ customer_id, subject }, { state }: { state: Db }) => {
      if (!state.customers.some((c) => c.id === customer_id)) throw new Error(`no customer ${customer_id}`);
      const t = state.tickets.find((x) => x.customer === customer_id && x.subject === subject.trim().toLowerCase());
      if (!t) throw new Error(`customer ${customer_id} has no ticket about "${subject}"`);
      return { id: t.id, subject: t.subject, status: t.status, priority: t.priority };
    },
  }),
  tool({
    name: 'set_priority',
    description: "Set an open ticket's priority.",
    parameters: z.object({ ticket_id: ticketId, priority: z.enum(PRIORITIES) }),
    kind: 'write',
    run: ({ ticket_id, priority }, { state }: { state: Db }) => {
      openTicket(state, ticket_id).priority = priority;
      return `ticket ${ticket_id} priority ${priority}`;
    },
  }),
  tool({
    name: 'close_ticket',
    description: 'Close a solved ticket.',
    parameters: z.object({ ticket_id: ticketId }),
    kind: 'write',
    run: ({ ticket_id }, { state }: { state: Db }) => {
      openTicket(state, ticket_id).status = 'closed';
      return `ticket ${ticket_id} closed`;
    },
  }),
  tool({
    name: 'escalate_ticket',
    description: 'Escalate an open ticket to a team.',
    parameters: z.object({ ticket_id: ticketId, team: z.enum(TEAMS) }),
    kind: 'write',
    run: ({ ticket_id, team }, { state }: { state: Db }) => {
      const t = openTicket(state, ticket_id);
      t.status = 'escalated';
      t.team = team;
      return `ticket ${ticket_id} escalated to ${team}`;
    },
  }),
];

// ---- the env -----------------------------------------------------------------------------------------------------

/** The demonstrator's closing message after the gold change. */
function summary(task: HelpDeskTask): string {
  const last = task.gold[task.gold.length - 1]!;
  const id = String(last.arguments.ticket_id);
  if (last.name === 'set_priority') return `Done: ticket ${id} is now ${String(last.arguments.priority)}.`;
  if (last.name === 'close_ticket') return `Done: ticket ${id} is closed.`;
  return `Done: ticket ${id} is escalated to ${String(last.arguments.team)}.`;
}

export interface HelpDeskOptions {
  /**
   * Reward taken off a solved episode for each tool call beyond the task's gold calls (a failed call counts too),
   * down to 0. Default 0: the reward is the final-state match alone.
   */
  callCost?: number;
  /**
   * The share of tasks on which the demonstrator lists the customer's tickets (`list_tickets`) before it looks the
   * ticket up by subject: a correct but unneeded call, as in logs from agents who check everything first. Which tasks
   * is fixed by the task's world seed. Default 0.
   */
  listFirst?: number;
}

const OPTION_KEYS = ['callCost', 'listFirst'];

/**
 * The help-desk env with options. `helpDesk()` is the default export's env; `{ callCost, listFirst }` gives the
 * variant where the demonstrations do more than the reward wants (README.md, "A reward the demonstrations do not show").
 */
export function helpDesk(options: HelpDeskOptions = {}) {
  const unknown = Object.keys(options).filter((k) => !OPTION_KEYS.includes(k));
  if (unknown.length > 0) throw new Error(`help-desk: unknown option(s) ${unknown.join(', ')} (options: ${OPTION_KEYS.join(', ')})`);
  const unit = (name: string, v: unknown): number => {
    if (v === undefined) return 0;
    if (typeof v !== 'number' || !(v >= 0 && v <= 1)) throw new Error(`help-desk: ${name} must be a number in [0, 1], got ${JSON.stringify(v)}`);
    return v;
  };
  const callCost = unit('callCost', options.callCost);
  const listFirst = unit('listFirst', options.listFirst);
  const match = rewards.finalState<Db, HelpDeskTask>({ gold: (task) => task.gold });
  const plain = callCost === 0 && listFirst === 0;
  return defineEnv<Db, HelpDeskTask>({
    id: plain ? 'examples/help-desk-v0' : `examples/help-desk-v0-cost${callCost}-list${listFirst}`,
    instructions: "You are a help-desk agent. Find the customer's ticket with the subject the message names, then make the change it asks for on that ticket. Then say what you did in one line.",
    tools,
    state: (task) => makeWorld(task.worldSeed),
    tasks: helpDeskTasks,
    // No `user`: single-agent, task.prompt is the first user message; the episode ends at the agent's first reply
    // without a tool call.
    reward: callCost === 0 ? match : async (ep) => {
      const m = await match(ep); // a RewardFn may return a bare number; finalState returns { reward, info }
      const solved = typeof m === 'number' ? m : m.reward;
      const extraCalls = Math.max(0, ep.toolCalls.length - ep.task.gold.length);
      const reward = solved === 1 ? Math.max(0, 1 - callCost * extraCalls) : 0;
      return { reward, info: { ...(typeof m === 'number' ? {} : m.info), solved, extraCalls } };
    },
    maxTurns: 8,
    family: (task) => task.family,
    // The gold turns, one tool call per turn, then the closing line; with listFirst, on that share of the tasks a
    // `list_tickets` call first. The change itself is always right: no mistake is planted.
    demonstrator: (task) => {
      const lists = listFirst > 0 && rng(task.worldSeed ^ 0x5bd1e995)() < listFirst;
      const customerId = String(task.gold[0]!.arguments.customer_id);
      const calls = lists ? [{ name: 'list_tickets', arguments: { customer_id: customerId } }, ...task.gold] : task.gold;
      return [...calls.map((call) => ({ toolCalls: [call] })), { content: summary(task) }];
    },
  });
}

export default helpDesk();

/**
 * The variant of README.md's "A reward the demonstrations do not show": half the demonstrations list the customer's
 * tickets first, and each call beyond the two a task needs costs 0.25 of the reward.
 * `longrun rollout --env ./env.ts:costly`, or `env: { module: ./env.ts, export: costly }` in a run file.
 */
export const costly = helpDesk({ callCost: 0.25, listFirst: 0.5 });

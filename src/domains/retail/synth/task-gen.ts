/**
 * Generates τ²-format retail tasks over a world: drafts a scenario per task (family, difficulty, user, requests),
 * derives the gold actions with the solver on a live copy of the world, and keeps the task only if it verifies
 * (`verifyTask`). Tasks that fail are dropped and counted.
 */
import type { Action, Task } from '../../../tooluse/tasks.ts';
import type { ReadonlyUser } from '../db.ts';
import { createRetailDomain, type RetailDomain } from '../domain.ts';
import type { RetailTables } from '../schema.ts';
import { knownInfo, reasonForCall, TASK_INSTRUCTIONS, unknownInfo } from './describe.ts';
import { GoldRecorder, InfeasibleDraft } from './gold.ts';
import { SynthRng } from './rng.ts';
import type { SynthIdentity, SynthRequest, SynthScenario, TaskFamily } from './scenario.ts';
import { TASK_FAMILIES } from './scenario.ts';
import { DO_KINDS, draftDoRequest, draftForbiddenRequest, FORBIDDEN_KINDS, type DoKind, type DraftContext } from './solver.ts';
import { verifyTask } from './verify.ts';

/** A generated task: the τ² fields plus the structured scenario the scripted user plays. */
export type SynthTask = Task & { longrun: SynthScenario };

export interface TaskGenOptions {
  count: number;
  families?: readonly TaskFamily[];
  /**
   * A level 1–5, or an inclusive range drawn per task. Default [1, 3]. Levels 4 and 5 are long-horizon variants of
   * level 3: more requests per conversation (multi: 4–5; forbidden: 3; single families get 1–2 extra requests first).
   */
  difficulty?: number | readonly [number, number];
  /** Recorded in each scenario (the seed the world was generated from). */
  worldSeed?: number;
  /** Task ids are `${idPrefix}${n}`. */
  idPrefix?: string;
  /** Policy text for the domain used while solving (not part of the tasks). */
  policy?: string;
}

export interface GeneratedTasks {
  tasks: SynthTask[];
  /** Drafts that could not be completed or did not verify. */
  dropped: number;
  droppedReasons: Record<string, number>;
}

const MAX_ATTEMPTS_PER_TASK = 40;
export const MAX_DIFFICULTY = 5;

function checkOptions(o: TaskGenOptions): { families: readonly TaskFamily[]; lo: number; hi: number } {
  if (!Number.isInteger(o.count) || o.count < 0) throw new Error(`count must be a non-negative integer, got ${o.count}`);
  const families = o.families ?? TASK_FAMILIES;
  if (families.length === 0) throw new Error('families must name at least one task family');
  for (const f of families) if (!TASK_FAMILIES.includes(f)) throw new Error(`Unknown task family '${f}' (known: ${TASK_FAMILIES.join(', ')})`);
  const [lo, hi] = typeof o.difficulty === 'number' ? [o.difficulty, o.difficulty] : (o.difficulty ?? [1, 3]);
  if (!Number.isInteger(lo) || !Number.isInteger(hi) || lo < 1 || hi > MAX_DIFFICULTY || lo > hi) throw new Error(`difficulty must be 1–${MAX_DIFFICULTY} or a range within it, got ${JSON.stringify(o.difficulty)}`);
  return { families, lo, hi };
}

function identityOf(user: ReadonlyUser, rng: SynthRng): SynthIdentity {
  return { userId: user.user_id, firstName: user.name.first_name, lastName: user.name.last_name, email: user.email, zip: user.address.zip, knowsEmail: rng.chance(0.5) };
}

/** Identity details that match nobody: an unused email and a zip no user with that name has. */
function wrongIdentity(world: RetailTables, user: ReadonlyUser, rng: SynthRng): SynthIdentity {
  const id = identityOf(user, rng);
  const emails = new Set([...world.users.values()].map((u) => u.email.toLowerCase()));
  const zips = new Set([...world.users.values()].filter((u) => u.name.first_name.toLowerCase() === id.firstName.toLowerCase() && u.name.last_name.toLowerCase() === id.lastName.toLowerCase()).map((u) => u.address.zip));
  let email = id.email;
  while (emails.has(email.toLowerCase())) email = `${id.firstName}.${id.lastName}${rng.digits(4, true)}@example.com`.toLowerCase();
  let zip = id.zip;
  while (zips.has(zip)) zip = rng.digits(5, true);
  return { ...id, email, zip };
}

interface Draft {
  scenario: SynthScenario;
  gold: GoldRecorder;
}

function requestCount(family: TaskFamily, difficulty: number): number {
  if (family === 'multi') return Math.max(2, difficulty);
  if (family === 'forbidden') return difficulty >= 4 ? 3 : difficulty >= 2 ? 2 : 1;
  if (family === 'failed_auth') return 1;
  return 1 + Math.max(0, difficulty - 3);
}

function draftScenario(domain: RetailDomain, world: RetailTables, family: TaskFamily, difficulty: number, worldSeed: number, rng: SynthRng): Draft | null {
  const users = [...world.users.values()];
  // Harder tasks prefer users with more orders (more distractors to leave alone).
  const minOrders = difficulty >= 3 ? difficulty : 1;
  const pool = users.filter((u) => u.orders.length >= minOrders);
  const user = rng.pick(pool.length ? pool : users);
  const gold = new GoldRecorder(domain, domain.freshDb());
  const authenticates = family !== 'failed_auth';
  const identity = authenticates ? identityOf(user, rng) : wrongIdentity(world, user, rng);
  if (authenticates) {
    if (identity.knowsEmail) gold.read('find_user_id_by_email', { email: identity.email });
    else gold.read('find_user_id_by_name_zip', { first_name: identity.firstName, last_name: identity.lastName, zip: identity.zip });
    gold.read('get_user_details', { user_id: user.user_id });
  }
  const ctx: DraftContext = { gold, rng, difficulty, user, usedOrders: new Set() };
  const requests: SynthRequest[] = [];
  const n = requestCount(family, difficulty);
  for (let i = 0; i < n; i++) {
    let r: SynthRequest | null;
    // Every request but the last of a forbidden or single-family task is a random one the agent should carry out.
    if (family === 'multi' || (family !== 'failed_auth' && i < n - 1)) r = draftDoRequest(ctx, rng.pick(DO_KINDS));
    else if (family === 'forbidden') {
      const other = rng.pick(users.filter((u) => u.user_id !== user.user_id));
      r = draftForbiddenRequest(ctx, rng.pick(FORBIDDEN_KINDS), other ?? null);
    } else if (family === 'failed_auth') {
      // The request is drafted on a scratch recorder: without authentication none of it may happen.
      const scratch: DraftContext = { ...ctx, gold: new GoldRecorder(domain, domain.freshDb()) };
      r = draftDoRequest(scratch, rng.pick(DO_KINDS));
      if (r) r = { ...r, outcome: 'refuse' };
    } else r = draftDoRequest(ctx, family as DoKind);
    if (!r) return null;
    requests.push(r);
  }
  if (!authenticates) {
    if (identity.knowsEmail) gold.read('find_user_id_by_email', { email: identity.email });
    gold.read('find_user_id_by_name_zip', { first_name: identity.firstName, last_name: identity.lastName, zip: identity.zip });
  }
  const scenario: SynthScenario = { version: 1, family, difficulty, worldSeed, styleSeed: rng.nextU32(), identity, authenticates, requests };
  return { scenario, gold };
}

function toTask(id: string, draft: Draft, rng: SynthRng): SynthTask {
  const s = draft.scenario;
  const actions: Action[] = draft.gold.calls.map((c, i) => ({
    action_id: `${id}_${i}`,
    requestor: 'assistant',
    name: c.name,
    arguments: c.arguments,
    info: null,
    compare_args: c.compareArgs ?? null,
  }));
  const communicate = s.authenticates ? s.requests.flatMap((r) => (r.kind === 'info' ? [r.answer] : (r.mustSay ?? []))) : [];
  return {
    id,
    description: { purpose: `Synthetic retail task: family ${s.family}, difficulty ${s.difficulty}`, relevant_policies: null, notes: null },
    user_scenario: {
      persona: null,
      instructions: { domain: 'retail', reason_for_call: reasonForCall(s), known_info: knownInfo(s), unknown_info: unknownInfo(s), task_instructions: rng.pick(TASK_INSTRUCTIONS) },
    },
    initial_state: null,
    evaluation_criteria: { actions, env_assertions: null, communicate_info: communicate, nl_assertions: null, reward_basis: ['DB', 'COMMUNICATE'] },
    longrun: s,
  };
}

/** Generates `count` verified tasks over `world`. Same world, seed and options → identical tasks. */
export function generateTasks(world: RetailTables, seed: number, options: TaskGenOptions): GeneratedTasks {
  const { families, lo, hi } = checkOptions(options);
  const domain = createRetailDomain({ db: world, policy: options.policy ?? '' });
  const root = new SynthRng(seed);
  const tasks: SynthTask[] = [];
  const droppedReasons: Record<string, number> = {};
  let dropped = 0;
  const drop = (why: string) => {
    dropped++;
    droppedReasons[why] = (droppedReasons[why] ?? 0) + 1;
  };
  for (let n = 0; n < options.count; n++) {
    const rng = root.fork(`task ${n}`);
    const family = families[n % families.length]!;
    let made: SynthTask | null = null;
    for (let attempt = 0; attempt < MAX_ATTEMPTS_PER_TASK && !made; attempt++) {
      const difficulty = rng.int(lo, hi);
      let draft: Draft | null;
      try {
        draft = draftScenario(domain, world, family, difficulty, options.worldSeed ?? seed, rng);
      } catch (err) {
        if (!(err instanceof InfeasibleDraft)) throw err;
        drop(`infeasible ${family}`);
        continue;
      }
      if (!draft) continue; // the drawn user had nothing suitable: not a failed task, just another draw
      const task = toTask(`${options.idPrefix ?? 'synth_'}${n}`, draft, rng);
      const problem = verifyTask(domain, task);
      if (problem) drop(problem);
      else made = task;
    }
    if (!made) throw new Error(`Could not generate a '${family}' task in ${MAX_ATTEMPTS_PER_TASK} attempts; the world may be too small`);
    tasks.push(made);
  }
  return { tasks, dropped, droppedReasons };
}

/**
 * Identity drill: short retail conversations that end right after the identity check, with a fresh random person
 * each, so that the agent sees thousands of names to copy instead of one per expert trajectory.
 *
 * The copy drill (copy-drill.ts) teaches a from-scratch model to copy ids, and names with them, but only tokens it can
 * pick by what precedes them in a list. The retail identity check needs more: the first token of a name or email is
 * found by what it means ("the email the user just gave") and written in another surface form — ` Evelyn` in the
 * user's sentence becomes `"first_name":"Evelyn"` in the call, and the user id comes back in a tool result to be
 * copied into the next call. Measured on held-out expert conversations (scripts/copy-nll.ts at commit 550649c), the first token of
 * every name costs ≈ 3–4 nats (a guess among the ~50 names) while the tokens after it cost ≈ 0.03.
 *
 * Each drill conversation takes its opening (greeting, the customer's request, the agent's identity question) from
 * an expert trajectory, then a new person answers in one of the user simulator's phrasings, and the expert's
 * moves follow: `find_user_id_by_email` or `find_user_id_by_name_zip`, the user id as the tool result, and
 * `get_user_details` with that id. The records render like any expert trajectory (sft-data.ts), so the loss falls on
 * the agent's turns only. Deterministic for a seed.
 */
import { FIRST_NAMES, LAST_NAMES } from '../../domains/retail/synth/catalog-data.ts';
import { SynthRng } from '../../domains/retail/synth/rng.ts';
import type { SynthIdentity } from '../../domains/retail/synth/scenario.ts';
import { identityReply } from '../../domains/retail/synth/user-phrasing.ts';
import type { TrajectoryRecord } from '../../rl/sft-data.ts';

export interface IdentityDrillOptions {
  /** Number of drill conversations. */
  documents: number;
  seed?: number;
  /**
   * Probability that a drill's customer identifies by name and zip instead of email. Unset: by email when the person
   * knows it, which is half of them (as before this option, draw for draw).
   */
  byName?: number;
}

type Message = TrajectoryRecord['messages'][number];

/** The messages of a trajectory before the customer's identity answer: greeting, request(s), identity question. */
export function identityOpening(record: TrajectoryRecord): Message[] | undefined {
  const firstCall = record.messages.findIndex((m) => m.role === 'assistant' && (m.toolCalls?.length ?? 0) > 0);
  if (firstCall < 2) return undefined;
  const answer = firstCall - 1;
  if (record.messages[answer].role !== 'user' || record.messages[answer - 1].role !== 'assistant') return undefined;
  const call = record.messages[firstCall].toolCalls![0].name;
  if (call !== 'find_user_id_by_email' && call !== 'find_user_id_by_name_zip') return undefined;
  return record.messages.slice(0, answer);
}

function randomIdentity(rng: SynthRng): SynthIdentity {
  const firstName = rng.pick(FIRST_NAMES), lastName = rng.pick(LAST_NAMES);
  const userId = `${firstName}_${lastName}_${rng.digits(4, true)}`.toLowerCase();
  return {
    userId, firstName, lastName, zip: rng.digits(5),
    email: `${firstName}.${lastName}${userId.slice(-4)}@example.com`.toLowerCase(),
    knowsEmail: rng.chance(0.5),
  };
}

/** The drill conversations, over the openings of `experts` (trajectories whose first tool call checks identity). */
export function identityDrillRecords(experts: readonly TrajectoryRecord[], options: IdentityDrillOptions): TrajectoryRecord[] {
  if (!(Number.isInteger(options.documents) && options.documents >= 1)) throw new RangeError(`identityDrill: documents must be a positive integer, got ${options.documents}`);
  const openings = experts.map(identityOpening).filter((o): o is Message[] => o !== undefined);
  if (options.byName !== undefined && !(options.byName >= 0 && options.byName <= 1)) throw new RangeError(`identityDrill: byName must be a probability in [0, 1], got ${options.byName}`);
  if (openings.length === 0) throw new Error('identityDrill: no expert trajectory starts with an identity check (find_user_id_by_email / find_user_id_by_name_zip as its first tool call)');
  const rng = new SynthRng(options.seed ?? 0);
  const out: TrajectoryRecord[] = [];
  for (let d = 0; d < options.documents; d++) {
    const identity = randomIdentity(rng);
    const byEmail = options.byName === undefined ? identity.knowsEmail : !rng.chance(options.byName);
    const find = byEmail
      ? { name: 'find_user_id_by_email', arguments: { email: identity.email } }
      : { name: 'find_user_id_by_name_zip', arguments: { first_name: identity.firstName, last_name: identity.lastName, zip: identity.zip } };
    out.push({
      taskId: `identity_drill_${d}`,
      messages: [
        ...rng.pick(openings),
        { role: 'user', content: identityReply(identity, byEmail, rng) },
        { role: 'assistant', content: null, toolCalls: [{ id: 'call_0', ...find }] },
        { role: 'tool', id: 'call_0', content: identity.userId },
        { role: 'assistant', content: null, toolCalls: [{ id: 'call_1', name: 'get_user_details', arguments: { user_id: identity.userId } }] },
      ],
    });
  }
  return out;
}

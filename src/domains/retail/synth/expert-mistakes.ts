/**
 * The expert's mistake knob: an imperfect demonstrator. At each decision point where an enabled mistake kind applies
 * (a write after the user's yes, a refusal, an answer to a question), the expert draws once against `rate` and, on a
 * hit, makes one plausible retail mistake of one of the applicable kinds. Every kind is one the τ² reward sees: the
 * final DB differs from the gold one, or a fact of the task's `communicate_info` is never said (τ²-bench's DB and
 * COMMUNICATE checks, arXiv 2506.07982). The list, where each kind applies and what the reward sees: README.md.
 */
import { SynthRng } from './rng.ts';

export const MISTAKE_KINDS = [
  'cancel_reason',
  'wrong_order',
  'payment_method',
  'refund_method',
  'item_variant',
  'return_item',
  'address_target',
  'forbidden_act',
  'withhold_info',
] as const;
export type MistakeKind = (typeof MISTAKE_KINDS)[number];

export interface ExpertMistakeOptions {
  /** Probability of a mistake at each decision point where an enabled kind applies, in [0, 1]. */
  rate: number;
  /** The kinds the expert may make (default: all of `MISTAKE_KINDS`). */
  kinds?: readonly MistakeKind[];
}

/** One mistake the expert made, as recorded in the trajectory. */
export interface MistakeRecord {
  kind: MistakeKind;
  detail: string;
}

/** A mistaken alternative at a decision point: what to do instead, and how to record it. */
export interface Slip<T> {
  detail: string;
  value: T;
}

export type SlipOptions<T> = Partial<Record<MistakeKind, readonly Slip<T>[]>>;

const isMistakeKind = (s: string): s is MistakeKind => (MISTAKE_KINDS as readonly string[]).includes(s);

/** Validates mistake kind names (e.g. from a CLI list or a config file). */
export function parseMistakeKinds(names: readonly string[]): MistakeKind[] {
  if (names.length === 0) throw new Error(`mistake kinds must name at least one kind (known: ${MISTAKE_KINDS.join(', ')})`);
  const out: MistakeKind[] = [];
  for (const name of names) {
    if (!isMistakeKind(name)) throw new Error(`Unknown mistake kind '${name}' (known: ${MISTAKE_KINDS.join(', ')})`);
    if (!out.includes(name)) out.push(name);
  }
  return out;
}

export function checkMistakeOptions(o: ExpertMistakeOptions): { rate: number; kinds: MistakeKind[] } {
  if (typeof o.rate !== 'number' || !Number.isFinite(o.rate) || o.rate < 0 || o.rate > 1) throw new Error(`mistake rate must be a number in [0, 1], got ${String(o.rate)}`);
  return { rate: o.rate, kinds: o.kinds === undefined ? [...MISTAKE_KINDS] : parseMistakeKinds(o.kinds) };
}

/** Draws the mistakes of one episode and keeps the record. */
export class MistakeMaker {
  readonly records: MistakeRecord[] = [];
  /** Decision points at which some enabled kind applied (each drew once against the rate). */
  opportunities = 0;
  private readonly rate: number;
  private readonly kinds: ReadonlySet<MistakeKind>;

  constructor(
    options: ExpertMistakeOptions,
    private readonly rng: SynthRng,
  ) {
    const o = checkMistakeOptions(options);
    this.rate = o.rate;
    this.kinds = new Set(o.kinds);
  }

  /**
   * One decision point. `options` lists, per kind, the mistaken alternatives that apply here (and would succeed);
   * returns the one chosen, or null for the right choice. Kinds without alternatives do not count.
   */
  decide<T>(options: SlipOptions<T>): { record: MistakeRecord; slip: Slip<T> } | null {
    const applicable = MISTAKE_KINDS.filter((k) => this.kinds.has(k) && (options[k]?.length ?? 0) > 0);
    if (applicable.length === 0) return null;
    this.opportunities++;
    if (!this.rng.chance(this.rate)) return null;
    const kind = this.rng.pick(applicable);
    const slip = this.rng.pick(options[kind]!);
    const record: MistakeRecord = { kind, detail: slip.detail };
    this.records.push(record);
    return { record, slip };
  }
}

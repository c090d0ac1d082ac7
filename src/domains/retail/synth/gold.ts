/**
 * The solver's bookkeeping: gold actions recorded while they run on the task's live DB. Write actions must succeed
 * (a failing write means the drafted request is not feasible, and the draft is dropped).
 */
import { executeToolCall } from '../../../tooluse/execute.ts';
import type { RetailDb } from '../db.ts';
import type { RetailDomain } from '../domain.ts';

export interface GoldCall {
  name: string;
  arguments: Record<string, unknown>;
  /** `[]` for calls whose arguments are free text (the transfer summary). */
  compareArgs?: string[];
}

export class InfeasibleDraft extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InfeasibleDraft';
  }
}

export class GoldRecorder {
  readonly calls: GoldCall[] = [];

  constructor(
    readonly domain: RetailDomain,
    readonly db: RetailDb,
  ) {}

  /** Runs a call on the live DB and records it; returns its output (errors are fine for reads). */
  read(name: string, args: Record<string, unknown>): { output: string; error: boolean } {
    this.calls.push({ name, arguments: args });
    return executeToolCall(this.domain, this.db, { name, arguments: args });
  }

  /** Runs a write that must succeed. */
  write(name: string, args: Record<string, unknown>): string {
    const result = executeToolCall(this.domain, this.db, { name, arguments: args });
    if (result.error) throw new InfeasibleDraft(`${name} failed: ${result.output}`);
    this.calls.push({ name, arguments: args });
    return result.output;
  }

  /** Tries a write without recording a failure (to test whether a choice, e.g. a payment method, works). */
  tryWrite(name: string, args: Record<string, unknown>): boolean {
    const probe = this.domain.freshDb();
    // Replay this task's writes so far on a scratch DB, then try the call there.
    for (const c of this.calls) executeToolCall(this.domain, probe, c);
    return !executeToolCall(this.domain, probe, { name, arguments: args }).error;
  }

  transfer(summary: string): void {
    this.calls.push({ name: 'transfer_to_human_agents', arguments: { summary }, compareArgs: [] });
    executeToolCall(this.domain, this.db, { name: 'transfer_to_human_agents', arguments: { summary } });
  }
}

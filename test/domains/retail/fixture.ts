/** Shared test setup: the τ²-bench retail data (loaded once per test process) and a small call helper. */
import { TAU2_RETAIL_DIR } from '../../helpers/paths.ts';
import { loadRetailData, type RetailData } from '../../../src/domains/retail/load.ts';
import { createRetailDomain, type RetailDomain, type RetailDomainOptions } from '../../../src/domains/retail/domain.ts';
import type { RetailDb } from '../../../src/domains/retail/db.ts';
import { executeToolCall, type ToolCallResult } from '../../../src/tooluse/execute.ts';

export const INITIAL_HASH = 'b25c9cb211f5efcaee5dd646054a73c4a9f43f4f5acc32c10713cd9f9ac20e9c';

let data: RetailData | undefined;
export function retailData(): RetailData {
  data ??= loadRetailData(TAU2_RETAIL_DIR);
  return data;
}

export function retailDomain(options: RetailDomainOptions = {}): RetailDomain {
  return createRetailDomain(retailData(), options);
}

/** Runs one tool call through the generic executor. */
export function call(domain: RetailDomain, db: RetailDb, name: string, args: Record<string, unknown> = {}): ToolCallResult {
  return executeToolCall(domain, db, { name, arguments: args });
}

/** Runs a call that must succeed and returns its output parsed as JSON. */
export function callJson(domain: RetailDomain, db: RetailDb, name: string, args: Record<string, unknown> = {}): any {
  const r = call(domain, db, name, args);
  if (r.error) throw new Error(`${name} failed: ${r.output}`);
  return JSON.parse(r.output);
}

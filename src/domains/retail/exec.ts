/**
 * `longrun tau2 exec`: run a list of tool calls in order on one fresh retail DB and report every output and the
 * final DB hash, in the shape the conformance checks compare with the Python implementation.
 */
import type { Domain } from '../../tooluse/types.ts';
import { executeToolCall, type ToolCallRequest, type ToolCallResult } from '../../tooluse/execute.ts';
import { parsePythonJson } from '../../tooluse/python/ordered-json.ts';

export interface ExecReport {
  results: ToolCallResult[];
  final_db_hash: string;
}

/**
 * Parses `{"calls":[{"name":…, "arguments":{…}}, …]}`; throws an Error that says what is wrong. Argument numbers are
 * typed as Python's json.loads types them (`1.0` is a float), which only shows in wrong-type error messages.
 */
export function parseExecInput(text: string): ToolCallRequest[] {
  let input: unknown;
  try {
    input = parsePythonJson(text);
  } catch (err) {
    throw new Error(`stdin is not valid JSON (${(err as Error).message}); expected {"calls":[{"name":…,"arguments":{…}},…]}`, {
      cause: err,
    });
  }
  if (input === null || typeof input !== 'object' || Array.isArray(input) || !Array.isArray((input as { calls?: unknown }).calls)) {
    throw new Error('stdin must be a JSON object with a "calls" array: {"calls":[{"name":…,"arguments":{…}},…]}');
  }
  return ((input as { calls: unknown[] }).calls).map((call, i) => {
    if (call === null || typeof call !== 'object' || Array.isArray(call) || typeof (call as { name?: unknown }).name !== 'string') {
      throw new Error(`calls[${i}] must be an object with a string "name" (and an "arguments" object)`);
    }
    const { name, arguments: args } = call as { name: string; arguments?: unknown };
    return { name, arguments: args === undefined ? {} : args };
  });
}

/** Runs the calls in order on one fresh DB of the domain. */
export function runExec<DB>(domain: Domain<DB>, calls: readonly ToolCallRequest[]): ExecReport {
  const db = domain.freshDb();
  const results = calls.map((call) => executeToolCall(domain, db, call));
  return { results, final_db_hash: domain.hashDb(db) };
}

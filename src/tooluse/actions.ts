/**
 * Agent actions for the tool-use env. Besides structured turns it accepts τ²'s gym strings (tau2.md §9), tried in
 * order: a JSON tool call `{"name": …, "arguments": {…}}`, a functional call `name(k='v', n=1)` with Python-literal
 * values, otherwise plain text for the user. The `done` pseudo-tool becomes the text `###STOP###` (agent stop).
 */
import type { AgentToolCall, AgentTurn } from './orchestrator.ts';
import { parsePythonKeywordArgs } from './python/python-literal.ts';
import { STOP_TOKEN } from './user.ts';

export const DONE_TOOL_NAME = 'done';

function jsonToolCall(text: string): AgentToolCall | null {
  if (!text.startsWith('{')) return null;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  if (typeof o.name !== 'string') return null;
  const args = o.arguments ?? {};
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return null;
  const call: AgentToolCall = { name: o.name, arguments: args };
  if (typeof o.id === 'string' && o.id !== '') call.id = o.id;
  return call;
}

const FUNCTIONAL = /^(\w+)\s*\((.*)\)$/;

function functionalToolCall(text: string): AgentToolCall | null {
  const m = FUNCTIONAL.exec(text);
  if (!m) return null;
  try {
    return { name: m[1]!, arguments: parsePythonKeywordArgs(m[2]!) };
  } catch {
    return null;
  }
}

/** Parses a τ² gym action string. Empty (all-whitespace) actions are rejected. */
export function parseActionString(action: string): AgentTurn {
  const text = action.trim();
  if (text === '') throw new Error('An action string cannot be empty: send text for the user or a tool call');
  const call = jsonToolCall(text) ?? functionalToolCall(text);
  return call ? { content: null, toolCalls: [call] } : { content: action, toolCalls: null };
}

/** A turn that calls `done` is an agent stop: it is replaced by the text `###STOP###`, as τ²'s gym agent does. */
export function applyDoneTool(turn: AgentTurn): AgentTurn {
  if (!turn.toolCalls?.some((c) => c.name === DONE_TOOL_NAME)) return turn;
  return { content: STOP_TOKEN, toolCalls: null };
}

export function toAgentTurn(action: string | AgentTurn): AgentTurn {
  if (typeof action === 'string') return applyDoneTool(parseActionString(action));
  if (typeof action !== 'object' || action === null) throw new Error(`An action must be a string or { content?, toolCalls? }, got ${action === null ? 'null' : typeof action}`);
  if (action.toolCalls !== undefined && action.toolCalls !== null && !Array.isArray(action.toolCalls)) throw new Error('action.toolCalls must be an array');
  for (const c of action.toolCalls ?? []) {
    if (typeof c !== 'object' || c === null || typeof c.name !== 'string') throw new Error('Each tool call needs a string name');
  }
  if (action.content !== undefined && action.content !== null && typeof action.content !== 'string') throw new Error('action.content must be a string');
  return applyDoneTool(action);
}

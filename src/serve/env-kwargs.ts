/**
 * Turns the JSON kwargs a client sends to `POST /sessions` into env kwargs. Clients can only send JSON, and must not
 * make the server read arbitrary folders, so: `dataDir` is fixed by the server (`--data`), and the retail `user` kwarg
 * is a name — `ticket` (the default deterministic TicketUser), `scripted` (the synthetic-task scripted user, for a
 * synthetic task-set folder) or `llm` (only when the server was started with an LLM user). LLM users and judges are
 * configured on the server (`--user-base-url/--user-model`, `--judge …`), never from client input: a client must
 * not make the server call URLs of its choosing.
 *
 * Every kwarg a built-in env takes is bounded here, at create, with a 400 that names the bound: a value that would
 * only fail later (at reset) or make the server spend unbounded memory or time (ReverseText's `maxWordLength: 1e9`
 * once ran the process out of heap) never reaches the env. Unknown kwargs are left to the env, which names them.
 */
import { join } from 'node:path';
import { RETAIL_ENV_IDS } from '../domains/retail/register.ts';
import { readTaskSet } from '../domains/retail/synth/taskset.ts';
import { ScriptedRetailUser } from '../domains/retail/synth/user-sim.ts';
import { definedEnvIds } from '../tooluse/api/index.ts';
import { TicketUser } from '../tooluse/user.ts';
import type { UserSimulator } from '../tooluse/user.ts';
import type { Judge } from '../tooluse/evaluator.ts';
import { badRequest } from './http-errors.ts';

const RETAIL_IDS = new Set<string>(Object.values(RETAIL_ENV_IDS));

/** `envId` is the registered id the client's id resolves to (an unversioned id names its latest version). */
export type KwargsResolver = (envId: string, kwargs: Record<string, unknown>) => Record<string, unknown>;

type Check = (value: unknown) => string | null;

const describe = (v: unknown): string => {
  const text = JSON.stringify(v) ?? String(v);
  return text.length > 60 ? `${text.slice(0, 60)}…` : text;
};
const integer = (min: number, max: number): Check => (v) =>
  typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? null : `must be an integer from ${min} to ${max}`;
const boolean: Check = (v) => (typeof v === 'boolean' ? null : 'must be true or false');
const shortString: Check = (v) => (typeof v === 'string' && v.length >= 1 && v.length <= 64 ? null : 'must be a string of 1 to 64 characters');
const renderMode: Check = (v) => (v === null || (typeof v === 'string' && v.length <= 32) ? null : 'must be a render mode name (e.g. "ansi") or null');

/** Options `make` takes for every env. */
const MAKE_OPTIONS: Record<string, Check> = {
  renderMode,
  maxEpisodeSteps: integer(1, 100_000),
  disableEnvChecker: boolean,
  recordEpisodeStatistics: boolean,
};

/** The bounds of each built-in env's own kwargs. */
export const KWARG_BOUNDS: Record<string, Record<string, Check>> = {
  'GuessNumber-v0': { n: integer(2, 1_000_000) },
  'ReverseText-v0': { numWords: integer(1, 1000), maxWordLength: integer(1, 1000) },
  ...Object.fromEntries([...RETAIL_IDS].map((id) => [id, {
    split: shortString,
    maxSteps: integer(1, 1000),
    maxErrors: integer(1, 1000),
    enforceCommunicationProtocol: boolean,
    allMessagesAsObservation: boolean,
  }])),
};

/** The kwargs a client may give an env defined with defineEnv (its task list comes from the module, never a client). */
export const DEFINED_ENV_BOUNDS: Record<string, Check> = { split: shortString };

/** 400 for the first kwarg outside its bound (only envs with known bounds; others take their kwargs as they are). */
export function checkKwargBounds(envId: string, kwargs: Record<string, unknown>): void {
  if (definedEnvIds().includes(envId)) {
    for (const [key, value] of Object.entries(kwargs)) {
      const check = DEFINED_ENV_BOUNDS[key] ?? MAKE_OPTIONS[key];
      if (!check) throw badRequest('invalid_kwargs', `kwargs.${key} is not an option of ${envId} (a client may set: ${[...Object.keys(DEFINED_ENV_BOUNDS), ...Object.keys(MAKE_OPTIONS)].join(', ')}; the tasks come from the env's module)`);
      const problem = check(value);
      if (problem) throw badRequest('invalid_kwargs', `kwargs.${key} ${problem}, got ${describe(value)} (${envId})`);
    }
    return;
  }
  const own = KWARG_BOUNDS[envId];
  if (!own) return;
  for (const [key, value] of Object.entries(kwargs)) {
    const check = own[key] ?? MAKE_OPTIONS[key];
    const problem = check?.(value);
    if (problem) throw badRequest('invalid_kwargs', `kwargs.${key} ${problem}, got ${describe(value)} (${envId})`);
  }
}

export const USER_NAMES = ['ticket', 'scripted', 'llm'] as const;

export interface ServerEnvConfig {
  dataDir?: string;
  /** Makes the LLM user for a session asking `user: "llm"`. */
  llmUser?: () => UserSimulator;
  /** The judge every retail session gets (needed by v1 tasks with NL assertions). */
  judge?: () => Judge;
}

function retailUser(name: unknown, dataDir: string | undefined, llmUser?: () => UserSimulator): UserSimulator {
  if (name === undefined || name === 'ticket') return new TicketUser();
  if (name === 'llm') {
    if (!llmUser) throw badRequest('invalid_kwargs', 'kwargs.user "llm" needs the server to be started with an LLM user (--user-base-url URL --user-model M)');
    return llmUser();
  }
  if (name === 'scripted') {
    const dir = dataDir ?? join('..', 'shared', 'tau2', 'retail');
    try {
      return new ScriptedRetailUser(readTaskSet(dir).scenarios);
    } catch (err) {
      throw badRequest('invalid_kwargs', `kwargs.user "scripted" needs a synthetic task set as the server's data folder: ${(err as Error).message}`);
    }
  }
  throw badRequest('invalid_kwargs', `kwargs.user must be one of ${USER_NAMES.map((n) => `"${n}"`).join(', ')}, got ${JSON.stringify(name)}`);
}

/** The default resolver: server-side `dataDir` for the retail envs, users by name, no client paths. */
export function defaultKwargsResolver(options: ServerEnvConfig = {}): KwargsResolver {
  const scripted = new Map<string, UserSimulator>();
  return (envId, kwargs) => {
    if ('dataDir' in kwargs) throw badRequest('invalid_kwargs', 'kwargs.dataDir cannot be set by a client: the data folder is chosen when the server starts (--data DIR)');
    if ('judge' in kwargs) throw badRequest('invalid_kwargs', 'kwargs.judge cannot be set by a client: judges are configured on the server');
    checkKwargBounds(envId, kwargs);
    if (!RETAIL_IDS.has(envId)) return { ...kwargs };
    const out: Record<string, unknown> = { ...kwargs };
    if (options.dataDir !== undefined) out.dataDir = options.dataDir;
    // Without a server-side judge, NL-graded v1 tasks are refused rather than silently graded by the fallback.
    out.judge = options.judge ? options.judge() : 'none';
    if (kwargs.user === 'scripted') {
      // One scripted user (and one parse of the task file) per server.
      let user = scripted.get(envId);
      if (!user) scripted.set(envId, (user = retailUser('scripted', options.dataDir)));
      out.user = user;
    } else {
      out.user = retailUser(kwargs.user, options.dataDir, options.llmUser);
    }
    return out;
  };
}

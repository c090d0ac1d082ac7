/**
 * Turns the JSON kwargs a client sends to `POST /sessions` into env kwargs. Clients can only send JSON, and must not
 * make the server read arbitrary folders, so: `dataDir` is fixed by the server (`--data`), and the retail `user` kwarg
 * is a name — `ticket` (the default deterministic TicketUser), `scripted` (the synthetic-task scripted user, for a
 * synthetic task-set folder) or `llm` (only when the server was started with an LLM user). LLM users and judges are
 * configured on the server (`--user-base-url/--user-model`, `--judge …`), never from client input: a client must
 * not make the server call URLs of its choosing.
 */
import { join } from 'node:path';
import { RETAIL_ENV_IDS } from '../domains/retail/register.ts';
import { readTaskSet } from '../domains/retail/synth/taskset.ts';
import { ScriptedRetailUser } from '../domains/retail/synth/user-sim.ts';
import { TicketUser } from '../tooluse/user.ts';
import type { UserSimulator } from '../tooluse/user.ts';
import type { Judge } from '../tooluse/evaluator.ts';
import { badRequest } from './http-errors.ts';

export type KwargsResolver = (envId: string, kwargs: Record<string, unknown>) => Record<string, unknown>;

const RETAIL_IDS = new Set<string>(Object.values(RETAIL_ENV_IDS));
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

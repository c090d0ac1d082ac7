/**
 * The env server's sessions: one env per session (its own DB and episode state), built with the gym registry's
 * `make`. Requests on a session are serialised by a FIFO lock; idle sessions are closed by a reaper; the number of
 * live sessions is capped.
 */
import { randomBytes } from 'node:crypto';
import type { Env } from '../gym/env.ts';
import { UnregisteredEnv } from '../gym/errors.ts';
import { make, registeredIds, spec } from '../gym/registry/registry.ts';
import { conflict, HttpError, notFound } from './http-errors.ts';
import type { KwargsResolver } from './env-kwargs.ts';
import { SessionLock } from './session-lock.ts';

export interface Session {
  readonly id: string;
  readonly envId: string;
  readonly env: Env;
  readonly lock: SessionLock;
  /** Seed given at creation, applied to the first reset that brings none. */
  pendingSeed: number | null;
  /** Whether the env was reset and the episode has not ended since. */
  episodeActive: boolean;
  /** Keys left out of step infos (`compact_info`). */
  readonly stepInfoExclude: ReadonlySet<string>;
  resetCount: number;
  stepCount: number;
  /** The tools of the last reset's info (envs whose tools come per episode), null before one. */
  lastTools: unknown[] | null;
  lastUsed: number;
  closed: boolean;
}

export interface SessionManagerOptions {
  maxSessions: number;
  /** Sessions unused for this long are closed (milliseconds; 0 disables). */
  idleTimeoutMs: number;
  /** Requests allowed to wait on one busy session before more are refused with 409. */
  maxWaitingPerSession: number;
  resolveKwargs: KwargsResolver;
  now?: () => number;
}

export class SessionManager {
  private readonly sessions = new Map<string, Session>();
  private reaper: NodeJS.Timeout | null = null;
  private readonly now: () => number;
  /** Sessions closed by the idle reaper (ids kept so a late request gets a precise 404). */
  private readonly expired = new Set<string>();
  reapedCount = 0;

  constructor(private readonly options: SessionManagerOptions) {
    this.now = options.now ?? Date.now;
    if (options.idleTimeoutMs > 0) {
      const every = Math.max(50, Math.min(options.idleTimeoutMs / 2, 30_000));
      this.reaper = setInterval(() => void this.reapIdle(), every);
      this.reaper.unref();
    }
  }

  get size(): number {
    return this.sessions.size;
  }

  create(envId: string, kwargs: Record<string, unknown>, seed: number | null, stepInfoExclude: readonly string[] = []): Session {
    if (this.sessions.size >= this.options.maxSessions) {
      throw new HttpError(
        429,
        'too_many_sessions',
        `The server already holds its maximum of ${this.options.maxSessions} sessions (--max-sessions); close some with DELETE /sessions/{id} or wait for idle ones to expire`,
        { 'retry-after': '1' },
      );
    }
    // The registered id behind the client's (an unversioned id names the latest version), so kwargs are checked
    // against the env that will actually be made; an unknown id falls through to make's own error.
    let registeredId = envId;
    try {
      registeredId = spec(envId).id;
    } catch {
      // reported by make below
    }
    const resolved = this.options.resolveKwargs(registeredId, kwargs);
    let env: Env;
    try {
      env = make(registeredId, resolved);
    } catch (err) {
      if (err instanceof UnregisteredEnv) {
        throw notFound('unknown_env', `${(err as Error).message} Registered envs: ${registeredIds().join(', ')}`);
      }
      throw new HttpError(400, 'invalid_kwargs', `Could not create ${envId}: ${(err as Error).message}`);
    }
    const id = randomBytes(12).toString('hex');
    const session: Session = {
      id,
      envId,
      env,
      lock: new SessionLock(this.options.maxWaitingPerSession),
      pendingSeed: seed,
      episodeActive: false,
      stepInfoExclude: new Set(stepInfoExclude),
      resetCount: 0,
      stepCount: 0,
      lastTools: null,
      lastUsed: this.now(),
      closed: false,
    };
    this.sessions.set(id, session);
    return session;
  }

  get(id: string): Session {
    const s = this.sessions.get(id);
    if (!s) {
      const why = this.expired.has(id) ? 'it was closed after being idle too long (--idle-timeout)' : 'it does not exist or was closed';
      throw notFound('unknown_session', `Unknown session ${JSON.stringify(id)}: ${why}. Create one with POST /sessions`);
    }
    return s;
  }

  /** Runs `fn` holding the session's lock; 409 when too many requests already wait on it. */
  async withSession<T>(id: string, fn: (s: Session) => Promise<T>): Promise<T> {
    const s = this.get(id);
    const run = s.lock.tryRun(async () => {
      if (s.closed) throw notFound('unknown_session', `Session ${id} was closed while this request waited`);
      try {
        return await fn(s);
      } finally {
        s.lastUsed = this.now();
      }
    });
    if (run === null) {
      throw conflict('session_busy', `Session ${id} is busy and ${this.options.maxWaitingPerSession} more request(s) already wait on it; send one request at a time per session`);
    }
    return run;
  }

  async close(id: string): Promise<void> {
    const s = this.get(id);
    this.sessions.delete(id);
    await this.closeSession(s);
  }

  private async closeSession(s: Session): Promise<void> {
    if (s.closed) return;
    s.closed = true;
    try {
      await s.env.close();
    } catch {
      // An env that fails to close is gone anyway; the session is removed either way.
    }
  }

  /** Closes sessions idle longer than the timeout (busy ones are left alone). */
  async reapIdle(): Promise<number> {
    const limit = this.options.idleTimeoutMs;
    if (limit <= 0) return 0;
    const now = this.now();
    const stale = [...this.sessions.values()].filter((s) => !s.lock.busy && now - s.lastUsed >= limit);
    for (const s of stale) {
      this.sessions.delete(s.id);
      this.expired.add(s.id);
      if (this.expired.size > 10_000) this.expired.delete(this.expired.values().next().value!);
      await this.closeSession(s);
    }
    this.reapedCount += stale.length;
    return stale.length;
  }

  async closeAll(): Promise<void> {
    if (this.reaper) clearInterval(this.reaper);
    this.reaper = null;
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(all.map((s) => this.closeSession(s)));
  }

  stats(): { sessions: number; maxSessions: number; reaped: number } {
    return { sessions: this.sessions.size, maxSessions: this.options.maxSessions, reaped: this.reapedCount };
  }
}

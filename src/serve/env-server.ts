/**
 * The env server: the gym registry over HTTP/JSON, so Python trainers (or anything that speaks HTTP) can drive
 * longrun envs. Node's `http`, no framework.
 *
 *   GET    /health                      {status, sessions, max_sessions, uptime_s}   (no token needed)
 *   GET    /envs                        {envs: [registered ids]}
 *   GET    /envs/{id}/tasks[?split=S]   {env_id, splits: {split: [task ids]}} (envs defined with defineEnv, retail)
 *   POST   /sessions                    {env_id, kwargs?, seed?, compact_info?} → {session_id, env_id, action_space,
 *                                        observation_space, metadata, spec}
 *   POST   /sessions/{id}/reset         {seed?, options?} → {observation, info}
 *   POST   /sessions/{id}/step          {action} → {observation, reward, terminated, truncated, info}
 *   GET    /sessions/{id}/tools         {tools: [OpenAI function schemas]} ([] for envs without tools)
 *   GET    /sessions/{id}/render        {render_mode, frame} (the env's render(); retail: "ansi" transcript text)
 *   GET    /sessions/{id}/messages      {messages: [the episode's messages so far, greeting first]} (tool-use envs)
 *   DELETE /sessions/{id}               {closed: true}
 *
 * Errors are `{"error": {"code", "message"}}`: 400 malformed JSON / invalid body / bad kwargs (each bounded, see
 * env-kwargs.ts) or reset options / a malformed percent-escape in the path, 401 missing or wrong bearer token, 403 a
 * request not addressed to loopback or from a foreign web page (only without a token on loopback), 404 unknown route,
 * env or session, 405 wrong method, 409 step before reset, step after the episode ended, or a session with too many
 * queued requests, 413 body over --max-body, 422 an action outside the action space (or nested deeper than
 * MAX_JSON_DEPTH), 429 --max-sessions reached, 503 shutting down, 500 an env that threw.
 *
 * Concurrency: sessions are independent and run concurrently; requests on one session are serialised FIFO (a
 * second concurrent step waits for the first), and at most `maxWaitingPerSession` may wait (default 4) before 409.
 * The seed given at creation seeds the first reset that brings no seed of its own.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InvalidAction, ResetNeeded } from '../gym/errors.ts';
import { registeredIds } from '../gym/registry/registry.ts';
import { registerBuiltinEnvs } from '../envs.ts';
import { defaultKwargsResolver, type KwargsResolver, type ServerEnvConfig } from './env-kwargs.ts';
import { CreateSessionBody, describeZodError, ResetBody, StepBody } from './env-protocol.ts';
import { SessionManager, type Session } from './env-sessions.ts';
import { badRequest, conflict, HttpError, notFound, unprocessable } from './http-errors.ts';
import { checkBearer, checkLocalRequest, decodePathParams, isLoopbackHost, jsonDepthExceeds, readJsonBody, sendError, sendJson } from './http-util.ts';
import { toJsonSafe } from './json-safe.ts';
import { defaultTaskLister, type TaskLister } from './env-tasks.ts';

export interface EnvServerOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Require `Authorization: Bearer <token>` on every route but /health. */
  token?: string | null;
  maxSessions?: number;
  /** Seconds; 0 disables the idle reaper. */
  idleTimeoutS?: number;
  maxBodyBytes?: number;
  maxWaitingPerSession?: number;
  /** Retail data folder (server-side `dataDir` kwarg). */
  dataDir?: string;
  /** Server-side LLM user (sessions opt in with `kwargs.user = "llm"`). */
  llmUser?: ServerEnvConfig['llmUser'];
  /** Server-side judge given to every retail session (v1 tasks with NL assertions need one). */
  judge?: ServerEnvConfig['judge'];
  resolveKwargs?: KwargsResolver;
  /** `GET /envs/{id}/tasks` (default: envs defined with defineEnv and the retail envs over `dataDir`). */
  listTasks?: TaskLister;
  /** Seconds to wait for in-flight requests on close before cutting connections. */
  shutdownGraceS?: number;
  /** Called with one line per notable event (start, shutdown, 5xx). */
  log?: (line: string) => void;
}

export interface EnvServerHandle {
  url: string;
  port: number;
  server: Server;
  sessions: SessionManager;
  close(): Promise<void>;
}

export const ENV_SERVER_DEFAULTS = {
  host: '127.0.0.1',
  port: 8765,
  maxSessions: 1024,
  idleTimeoutS: 600,
  maxBodyBytes: 1 << 20,
  maxWaitingPerSession: 4,
  shutdownGraceS: 5,
} as const;

/** Info keys that are constant over a session and left out of step infos with `compact_info`. */
export const COMPACT_INFO_EXCLUDE = ['tools', 'policy', 'systemPrompt'];

function withoutKeys(info: unknown, keys: ReadonlySet<string>): unknown {
  if (keys.size === 0 || typeof info !== 'object' || info === null) return info;
  return Object.fromEntries(Object.entries(info).filter(([k]) => !keys.has(k)));
}

/** Bodies (and actions) may nest at most this deep; deeper ones are refused before anything walks them. */
export const MAX_JSON_DEPTH = 64;

type Handler = (req: IncomingMessage, params: string[]) => Promise<[number, unknown]>;
interface Route {
  pattern: RegExp;
  methods: Record<string, Handler>;
}

function parseBody<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: import('zod').ZodError } }, raw: unknown, what: string): T {
  if (jsonDepthExceeds(raw, MAX_JSON_DEPTH)) {
    // A step body is {action}: the action is what nests, and an action outside what the server accepts is a 422.
    if (what === 'step') throw unprocessable('invalid_action', `The action nests deeper than ${MAX_JSON_DEPTH} levels of objects and arrays; nothing was sent to the env`);
    throw badRequest('invalid_body', `The ${what} body nests deeper than ${MAX_JSON_DEPTH} levels of objects and arrays`);
  }
  const parsed = schema.safeParse(raw ?? {});
  if (!parsed.success) throw badRequest('invalid_body', `Invalid ${what} body: ${describeZodError(parsed.error)}`);
  return parsed.data;
}

/**
 * The tools the agent is shown: the env's `tools` (retail), else those of the session's last reset (an env defined
 * with defineEnv: its tools and its sources'), else the defined env's own before any reset.
 */
function toolsOf(s: Session): unknown[] {
  const env = s.env.unwrapped as unknown as { tools?: unknown; definition?: { toolSpecs?: () => unknown[] | null } };
  if (Array.isArray(env.tools)) return env.tools;
  if (s.lastTools) return s.lastTools;
  const own = typeof env.definition?.toolSpecs === 'function' ? env.definition.toolSpecs() : null;
  return Array.isArray(own) ? own : [];
}

/** The env's record of the current episode (tool-use envs keep one as `messages`). */
function messagesOf(s: Session): unknown[] | null {
  const messages = (s.env.unwrapped as unknown as { messages?: unknown }).messages;
  return Array.isArray(messages) ? messages : null;
}

export async function startEnvServer(options: EnvServerOptions = {}): Promise<EnvServerHandle> {
  registerBuiltinEnvs();
  const o = { ...ENV_SERVER_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) } as typeof ENV_SERVER_DEFAULTS & EnvServerOptions;
  const token = options.token ?? null;
  if (token !== null && token.length === 0) throw new Error('An empty --token would accept anyone; give a real token or none');
  // Without a token, a loopback server answers only loopback-addressed requests that no foreign web page sent.
  const localOnly = token === null && isLoopbackHost(o.host);
  const log = options.log ?? (() => {});
  const sessions = new SessionManager({
    maxSessions: o.maxSessions,
    idleTimeoutMs: o.idleTimeoutS * 1000,
    maxWaitingPerSession: o.maxWaitingPerSession,
    resolveKwargs: options.resolveKwargs ?? defaultKwargsResolver({ dataDir: options.dataDir, llmUser: options.llmUser, judge: options.judge }),
  });
  const listTasks = options.listTasks ?? defaultTaskLister({ dataDir: options.dataDir });
  const started = Date.now();
  let draining = false;
  let inFlight = 0;

  const body = (req: IncomingMessage) => readJsonBody(req, o.maxBodyBytes);

  const routes: Route[] = [
    {
      pattern: /^\/health$/,
      methods: { GET: async () => [200, { status: 'ok', sessions: sessions.size, max_sessions: o.maxSessions, uptime_s: (Date.now() - started) / 1000 }] },
    },
    { pattern: /^\/envs$/, methods: { GET: async () => [200, { envs: registeredIds() }] } },
    {
      pattern: /^\/envs\/(.+)\/tasks$/,
      methods: {
        GET: async (req, [envId]) => {
          if (!registeredIds().includes(envId!)) throw notFound('unknown_env', `No env ${JSON.stringify(envId)}. Registered envs: ${registeredIds().join(', ')}`);
          const split = new URL(req.url ?? '/', 'http://localhost').searchParams.get('split');
          return [200, { env_id: envId, splits: await listTasks(envId!, split) }];
        },
      },
    },
    {
      pattern: /^\/sessions$/,
      methods: {
        POST: async (req) => {
          const b = parseBody(CreateSessionBody, await body(req), 'POST /sessions');
          const s = sessions.create(b.env_id, b.kwargs ?? {}, b.seed ?? null, b.compact_info ? COMPACT_INFO_EXCLUDE : []);
          const spec = s.env.spec;
          return [
            201,
            {
              session_id: s.id,
              env_id: s.envId,
              action_space: toJsonSafe(s.env.actionSpace.toJSON()),
              observation_space: toJsonSafe(s.env.observationSpace.toJSON()),
              metadata: toJsonSafe(s.env.metadata) ?? {},
              spec: { id: spec?.id ?? b.env_id, max_episode_steps: spec?.maxEpisodeSteps ?? null },
            },
          ];
        },
      },
    },
    {
      pattern: /^\/sessions\/([^/]+)\/reset$/,
      methods: {
        POST: async (req, [id]) => {
          const b = parseBody(ResetBody, await body(req), 'reset');
          return sessions.withSession(id!, async (s) => {
            const seed = b.seed ?? s.pendingSeed;
            s.pendingSeed = null;
            let result;
            try {
              result = await s.env.reset({ seed, options: b.options ?? null });
            } catch (err) {
              s.episodeActive = false;
              throw badRequest('reset_failed', `reset failed: ${(err as Error).message}`);
            }
            s.episodeActive = true;
            s.resetCount++;
            const [observation, info] = result;
            const tools = (info as { tools?: unknown } | null)?.tools;
            s.lastTools = Array.isArray(tools) ? tools : null;
            return [200, { observation: toJsonSafe(observation) ?? null, info: toJsonSafe(info) ?? {} }];
          });
        },
      },
    },
    {
      pattern: /^\/sessions\/([^/]+)\/step$/,
      methods: {
        POST: async (req, [id]) => {
          const b = parseBody(StepBody, await body(req), 'step');
          return sessions.withSession(id!, async (s) => {
            if (s.resetCount === 0) throw conflict('reset_needed', 'Call POST /sessions/{id}/reset before the first step');
            if (!s.episodeActive) throw conflict('episode_over', 'The episode has ended (terminated or truncated); call reset to start a new one');
            if (!s.env.actionSpace.contains(b.action)) {
              throw unprocessable('invalid_action', `The action is not in the action space (${s.env.actionSpace.type}): ${JSON.stringify(b.action).slice(0, 200)}`);
            }
            let result;
            try {
              result = await s.env.step(b.action);
            } catch (err) {
              if (err instanceof ResetNeeded) {
                s.episodeActive = false;
                throw conflict('reset_needed', err.message);
              }
              if (err instanceof InvalidAction) throw unprocessable('invalid_action', err.message);
              throw new HttpError(500, 'env_error', `The env failed on this step: ${(err as Error).message}. The episode state may be inconsistent; reset the session.`);
            }
            const [observation, reward, terminated, truncated, info] = result;
            s.stepCount++;
            if (terminated || truncated) s.episodeActive = false;
            return [200, { observation: toJsonSafe(observation) ?? null, reward: Number.isFinite(reward) ? reward : null, terminated, truncated, info: toJsonSafe(withoutKeys(info, s.stepInfoExclude)) ?? {} }];
          });
        },
      },
    },
    {
      pattern: /^\/sessions\/([^/]+)\/render$/,
      methods: {
        GET: async (_req, [id]) =>
          sessions.withSession(id!, async (s) => {
            try {
              return [200, { render_mode: s.env.renderMode, frame: toJsonSafe(await s.env.render()) ?? null }];
            } catch (err) {
              if (err instanceof ResetNeeded) throw conflict('reset_needed', err.message);
              throw new HttpError(500, 'env_error', `render failed: ${(err as Error).message}`);
            }
          }),
      },
    },
    {
      pattern: /^\/sessions\/([^/]+)\/messages$/,
      methods: {
        GET: async (_req, [id]) =>
          sessions.withSession(id!, async (s) => {
            const messages = messagesOf(s);
            if (messages === null) throw notFound('no_messages', `env ${s.envId} keeps no message record (only tool-use envs do)`);
            return [200, { messages: toJsonSafe(messages) ?? [] }];
          }),
      },
    },
    {
      pattern: /^\/sessions\/([^/]+)\/tools$/,
      methods: { GET: async (_req, [id]) => sessions.withSession(id!, async (s) => [200, { tools: toJsonSafe(toolsOf(s)) }]) },
    },
    {
      pattern: /^\/sessions\/([^/]+)$/,
      methods: {
        DELETE: async (_req, [id]) => {
          sessions.get(id!);
          // Let a running step finish first; then close.
          await sessions.withSession(id!, async () => undefined).catch(() => undefined);
          await sessions.close(id!).catch(() => undefined);
          return [200, { closed: true, session_id: id }];
        },
      },
    },
  ];

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    inFlight++;
    try {
      if (draining) {
        req.resume();
        throw new HttpError(503, 'shutting_down', 'The server is shutting down', { connection: 'close' });
      }
      let url: URL;
      try {
        if (localOnly) checkLocalRequest(req);
        url = new URL(req.url ?? '/', 'http://localhost');
      } catch (err) {
        req.resume();
        if (err instanceof HttpError) throw err;
        throw badRequest('bad_request', `Malformed request target ${JSON.stringify((req.url ?? '').slice(0, 100))}`);
      }
      const route = routes.find((r) => r.pattern.test(url.pathname));
      if (!route) {
        req.resume();
        throw notFound('not_found', `No route ${req.method} ${url.pathname}. Routes: GET /health, GET /envs, GET /envs/{id}/tasks, POST /sessions, POST /sessions/{id}/reset, POST /sessions/{id}/step, GET /sessions/{id}/tools, GET /sessions/{id}/render, GET /sessions/{id}/messages, DELETE /sessions/{id}`);
      }
      const handler = route.methods[req.method ?? ''];
      if (!handler) {
        req.resume();
        throw new HttpError(405, 'method_not_allowed', `${req.method} is not allowed on ${url.pathname} (allowed: ${Object.keys(route.methods).join(', ')})`, { allow: Object.keys(route.methods).join(', ') });
      }
      try {
        if (token !== null && url.pathname !== '/health') checkBearer(req, token);
      } catch (err) {
        req.resume();
        throw err;
      }
      let params: string[];
      try {
        params = decodePathParams((route.pattern.exec(url.pathname) ?? []).slice(1));
      } catch (err) {
        req.resume();
        throw err;
      }
      const [status, payload] = await handler(req, params);
      sendJson(res, status, payload);
    } catch (err) {
      if (err instanceof HttpError) {
        if (err.status === 499) return; // the client left; nobody to answer
        if (err.status === 413) res.setHeader('connection', 'close');
        sendError(res, err);
      } else {
        log(`500 ${req.method} ${req.url}: ${(err as Error)?.stack ?? String(err)}`);
        sendError(res, new HttpError(500, 'internal_error', `Internal server error: ${(err as Error)?.message ?? String(err)}`));
      }
    } finally {
      inFlight--;
    }
  }

  const server = createServer((req, res) => {
    res.on('error', () => {}); // a client that hung up mid-reply is not the server's problem
    void handle(req, res);
  });
  server.on('clientError', (err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-type: application/json\r\n\r\n{"error":{"code":"bad_request","message":"Malformed HTTP request"}}');
    else socket.destroy(err);
  });
  server.keepAliveTimeout = 65_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostForUrl = o.host.includes(':') ? `[${o.host}]` : o.host;
  const url = `http://${hostForUrl}:${port}`;
  log(`longrun env server listening on ${url} (max ${o.maxSessions} sessions, idle timeout ${o.idleTimeoutS}s, max body ${o.maxBodyBytes} bytes${token ? ', bearer token required' : ''})`);

  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      draining = true;
      const stopped = new Promise<void>((r) => server.close(() => r()));
      server.closeIdleConnections();
      const deadline = Date.now() + o.shutdownGraceS * 1000;
      while (inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      server.closeAllConnections();
      await stopped;
      await sessions.closeAll();
      log('longrun env server stopped');
    })());

  return { url, port, server, sessions, close };
}

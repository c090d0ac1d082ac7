/**
 * MCP servers as tool sources (issue 49 part 4), on the official `@modelcontextprotocol/sdk` client.
 *
 *   const memory = mcpServer({
 *     name: 'memory',
 *     command: process.execPath,
 *     args: [memoryServerEntry],
 *     env: ({ state }) => ({ MEMORY_FILE_PATH: join(state.dir, 'memory.jsonl') }),
 *   });
 *   defineEnv({ …, sources: [memory], reward: async (ep) => graphOf(ep.sources.memory as Client) });
 *
 * Every episode gets fresh server state:
 * - stdio: a new process per episode, started in a process group of its own; `close()` ends its stdin, then
 *   signals the whole group (SIGTERM, then SIGKILL) and waits until the process is gone, so neither the server nor
 *   anything it started outlives the episode. `args`, `env` and `cwd` may be functions of the episode (task, state,
 *   seed, id), so each server gets the episode's own files. The child's environment is the SDK's safe default set
 *   (HOME, PATH, …) plus `env`, not the whole parent environment.
 * - Streamable HTTP: a new session per episode (the server keeps state per session), ended with an HTTP DELETE at
 *   close.
 * At most `maxConcurrent` servers (default 8) of one source are open at once; further opens wait for a slot. If this
 * process exits with servers still open, their process groups are killed on the way out.
 *
 * The server's tools become `ToolDef`s: the MCP name (or `prefix_name` when `prefix` is set, for servers whose tool
 * names clash with another source's or the env's own — the env refuses clashing names), its description, and its
 * `inputSchema` as the JSON Schema parameters; `include` keeps some of them (in its order), for a shorter prompt.
 * Calls are routed with a timeout (`timeoutMs`, default 30 s, and the call's abort signal). What the agent sees:
 * - a result: its text content joined by newlines; images, audio and resources summarised as `[image: image/png,
 *   1234 bytes]` and the like; `structuredContent` as JSON when there is no content;
 * - a tool error: a result with `isError`, a JSON-RPC error from the server (unknown tool, invalid params), a timeout.
 * What ends the episode as an env error (`EpisodeError`, naming the server and carrying the tail of its stderr): a
 * server that cannot be spawned, exits before `initialize`, does not answer it within `startTimeoutMs` (default
 * 20 s), or dies (exits, drops the connection) during the episode.
 *
 * The open source's `handle` is the connected MCP `Client`, so a reward can read the end state (e.g. server-memory's
 * `read_graph`) before the episode's sources are closed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { basename } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation';
import { ErrorCode, McpError, type CallToolResult, type JSONRPCMessage, type Tool as McpTool } from '@modelcontextprotocol/sdk/types.js';
import { EpisodeError } from './errors.ts';
import type { JsonSchema, OpenToolSource, Task, ToolContext, ToolDef, ToolSource, ToolSourceContext } from './types.ts';

/** What `args`, `env` and `cwd` functions receive: the episode being opened. */
export interface McpEpisodeContext {
  task: Task;
  state: unknown;
  seed: number;
  episodeId: string;
}

type PerEpisode<V> = V | ((ctx: McpEpisodeContext) => V);

export interface McpStdioSpec {
  /** The source's name: tool errors and env errors name it, and the reward finds the client at `episode.sources[name]`. */
  name?: string;
  command: string;
  args?: PerEpisode<string[]>;
  /** Added to the SDK's default inherited variables (HOME, LOGNAME, PATH, SHELL, TERM, USER). */
  env?: PerEpisode<Record<string, string>>;
  cwd?: PerEpisode<string>;
}

export interface McpHttpSpec {
  name?: string;
  /** The Streamable HTTP endpoint, e.g. `http://127.0.0.1:3000/mcp`. */
  url: string;
  headers?: Record<string, string>;
}

export type McpServerSpec = McpStdioSpec | McpHttpSpec;

export interface McpServerOptions {
  /** Per tool call (default 30 000 ms); a call that takes longer is a tool error. */
  timeoutMs?: number;
  /** From spawn (or the first HTTP request) to a completed `initialize` and tool list (default 20 000 ms). */
  startTimeoutMs?: number;
  /** Servers of this source open at once (default 8); `open` waits for a slot. */
  maxConcurrent?: number;
  /** Only these of the server's tools, in this order (an unknown name is an error at open). */
  include?: readonly string[];
  /** Names the tools `${prefix}_${name}`, for servers whose tool names clash with other tools of the env. */
  prefix?: string;
}

/** What `mcpServer(...).open` returns: the tools, `close`, the client as `handle`, and for stdio the server's pid. */
export interface OpenMcpServer extends OpenToolSource {
  handle: Client;
  /** The server process (stdio only). */
  pid?: number;
  /** The last few KiB of the server's stderr (stdio only; empty for HTTP). */
  stderrTail(): string;
}

export interface McpToolSource extends ToolSource {
  open(ctx: ToolSourceContext): Promise<OpenMcpServer>;
  /** Servers open right now (for tests and monitoring). */
  readonly openCount: number;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_START_TIMEOUT_MS = 20_000;
const DEFAULT_MAX_CONCURRENT = 8;
const STDERR_TAIL_BYTES = 4096;
/** After stdin is closed, how long a server may take to exit by itself before its group is signalled. */
const EXIT_GRACE_MS = 1000;
const TERM_GRACE_MS = 2000;

// ---------------------------------------------------------------------------------------------------------------
// The stdio transport. The SDK's StdioClientTransport spawns the server in our own process group and kills only the
// direct child, so a server started through a wrapper (npx, a shell script) would leave its real process behind.
// This one speaks the same framing (the SDK's ReadBuffer / serializeMessage) but spawns a process group leader and
// signals the group.
// ---------------------------------------------------------------------------------------------------------------

/** Process groups still alive, killed if this process exits without closing them. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

function killGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group is gone
  }
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const pid of liveGroups) killGroup(pid, 'SIGKILL');
  });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

class ProcessGroupStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child?: ChildProcess;
  private readonly readBuffer = new ReadBuffer();
  private stderrChunks: Buffer[] = [];
  private stderrBytes = 0;
  private closedPromise?: Promise<void>;
  /** Why the process ended, once it has (`exited with code 1`, `was killed by SIGKILL`). */
  exit?: string;
  /** Set once close() was called: the exit that follows is ours, not a crash. */
  closing = false;
  /** The process ended (or never started) before close() was called. */
  crashed = false;

  constructor(
    private readonly command: string,
    private readonly args: string[],
    private readonly env: Record<string, string>,
    private readonly cwd: string | undefined,
  ) {}

  get pid(): number | undefined {
    return this.child?.pid;
  }

  stderrTail(): string {
    return Buffer.concat(this.stderrChunks).toString('utf8').slice(-STDERR_TAIL_BYTES);
  }

  start(): Promise<void> {
    if (this.child) throw new Error('transport already started');
    return new Promise((resolve, reject) => {
      const child = spawn(this.command, this.args, {
        env: this.env,
        cwd: this.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: process.platform !== 'win32',
        shell: false,
        windowsHide: true,
      });
      this.child = child;
      let spawned = false;
      this.closedPromise = new Promise((done) => child.once('close', () => done()));
      child.once('spawn', () => {
        spawned = true;
        if (child.pid !== undefined && process.platform !== 'win32') {
          installExitHook();
          liveGroups.add(child.pid);
        }
        resolve();
      });
      child.once('error', (error) => {
        if (!spawned) {
          this.crashed = true;
          this.exit = `could not be started (${error.message})`;
          reject(error);
        } else this.onerror?.(error);
      });
      child.once('exit', (code, signal) => {
        if (!this.closing) this.crashed = true;
        this.exit = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      });
      child.once('close', () => {
        if (child.pid !== undefined) {
          // The leader is gone; anything it left in its group goes with it.
          killGroup(child.pid, 'SIGKILL');
          liveGroups.delete(child.pid);
        }
        if (spawned) this.onclose?.();
      });
      child.stdin?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('error', (error) => this.onerror?.(error));
      child.stdout?.on('data', (chunk: Buffer) => {
        this.readBuffer.append(chunk);
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.readBuffer.readMessage();
          } catch (error) {
            this.onerror?.(error as Error);
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
      child.stderr?.on('data', (chunk: Buffer) => {
        this.stderrChunks.push(chunk);
        this.stderrBytes += chunk.length;
        while (this.stderrBytes - this.stderrChunks[0].length >= STDERR_TAIL_BYTES && this.stderrChunks.length > 1) {
          this.stderrBytes -= this.stderrChunks.shift()!.length;
        }
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || this.exit !== undefined || stdin.destroyed) return Promise.reject(new Error('not connected'));
    return new Promise((resolve, reject) => {
      const ok = stdin.write(serializeMessage(message), (error) => {
        if (error) reject(error);
      });
      if (ok) resolve();
      else stdin.once('drain', resolve);
    });
  }

  /** Ends stdin, waits briefly, then SIGTERM and SIGKILL to the process group; resolves once the process is gone. */
  async close(): Promise<void> {
    this.closing = true;
    const child = this.child;
    if (!child || !this.closedPromise) return;
    const gone = this.closedPromise;
    const pid = child.pid;
    if (this.exit === undefined) {
      try {
        child.stdin?.end();
      } catch {
        // already closed
      }
      const waited = (ms: number) => Promise.race([gone.then(() => true), sleep(ms).then(() => false)]);
      if (!(await waited(EXIT_GRACE_MS)) && pid !== undefined) {
        if (!killGroup(pid, 'SIGTERM')) child.kill('SIGTERM');
        if (!(await waited(TERM_GRACE_MS))) {
          if (!killGroup(pid, 'SIGKILL')) child.kill('SIGKILL');
        }
      }
    }
    if (pid === undefined) {
      await Promise.race([gone, sleep(TERM_GRACE_MS)]); // never spawned: nothing to signal
      return;
    }
    await gone;
    {
      // Wait (briefly) until no process of the group is left.
      for (let i = 0; i < 50 && killGroup(pid, 0); i++) {
        killGroup(pid, 'SIGKILL');
        await sleep(10);
      }
      liveGroups.delete(pid);
    }
    this.readBuffer.clear();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Results and errors
// ---------------------------------------------------------------------------------------------------------------

function byteLength(base64: string): number {
  const padding = base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0;
  return Math.max(0, Math.floor((base64.length * 3) / 4) - padding);
}

/** The text the agent sees for an MCP tool result: text parts joined by newlines, other parts summarised. */
export function renderMcpContent(result: Pick<CallToolResult, 'content' | 'structuredContent'>): string {
  const content = result.content ?? [];
  if (content.length === 0) return result.structuredContent !== undefined ? JSON.stringify(result.structuredContent) : '';
  const parts: string[] = [];
  for (const part of content) {
    switch (part.type) {
      case 'text':
        parts.push(part.text);
        break;
      case 'image':
      case 'audio':
        parts.push(`[${part.type}: ${part.mimeType}, ${byteLength(part.data)} bytes]`);
        break;
      case 'resource': {
        const r = part.resource;
        if ('text' in r && typeof r.text === 'string') parts.push(r.text);
        else parts.push(`[resource: ${r.uri}${r.mimeType ? `, ${r.mimeType}` : ''}${'blob' in r ? `, ${byteLength(String(r.blob))} bytes` : ''}]`);
        break;
      }
      case 'resource_link':
        parts.push(`[resource link: ${part.uri}${part.name ? ` (${part.name})` : ''}${part.mimeType ? `, ${part.mimeType}` : ''}]`);
        break;
      default:
        parts.push(`[${(part as { type: string }).type} content]`);
    }
  }
  return parts.join('\n');
}

/** Errors from the connection itself (not an answer of the server): the server is gone or unreachable. */
function isConnectionFailure(error: unknown): boolean {
  if (error instanceof McpError) return error.code === ErrorCode.ConnectionClosed;
  return true; // a transport error: fetch failed, HTTP status, a write to a closed pipe
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function mcpToolKind(tool: McpTool): ToolDef['kind'] {
  const a = tool.annotations;
  if (a?.readOnlyHint === true) return 'read';
  if (a?.readOnlyHint === false) return 'write';
  return 'generic';
}

/**
 * The tool's input schema without `$schema`. Every episode lists the tools anew; the same schema (by its JSON text)
 * is handed out as the same object, so the env's argument validator, cached per schema object, compiles it once.
 */
function parametersOf(tool: McpTool, cache: Map<string, JsonSchema>): JsonSchema {
  const { $schema: _ignored, ...schema } = tool.inputSchema as JsonSchema;
  const key = JSON.stringify(schema);
  let shared = cache.get(key);
  if (!shared) {
    shared = schema;
    cache.set(key, shared);
  }
  return shared;
}

/**
 * The clients' validator of tool output schemas, shared: every episode's client lists the same tools, and the SDK
 * compiles each output schema at listing; this compiles a schema (by its JSON text) once per process.
 */
class SharedSchemaValidator implements jsonSchemaValidator {
  private ajv = new AjvJsonSchemaValidator();
  private readonly compiled = new Map<string, JsonSchemaValidator<unknown>>();

  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    const key = JSON.stringify(schema);
    let v = this.compiled.get(key);
    if (!v) {
      if (this.compiled.size >= 10_000) {
        // a bound, for servers whose schemas change every time (the Ajv instance holds what it compiled, too)
        this.compiled.clear();
        this.ajv = new AjvJsonSchemaValidator();
      }
      v = this.ajv.getValidator<unknown>(schema);
      this.compiled.set(key, v);
    }
    return v as JsonSchemaValidator<T>;
  }
}
let sharedValidator: SharedSchemaValidator | undefined;

// ---------------------------------------------------------------------------------------------------------------
// Bounded concurrency
// ---------------------------------------------------------------------------------------------------------------

class Slots {
  private used = 0;
  private readonly waiting: { resolve: () => void; reject: (e: unknown) => void; signal: AbortSignal; onAbort: () => void }[] = [];
  constructor(private readonly limit: number) {}

  get inUse(): number {
    return this.used;
  }

  acquire(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.used < this.limit) {
      this.used++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const entry = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          const i = this.waiting.indexOf(entry);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(signal.reason);
        },
      };
      signal.addEventListener('abort', entry.onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  release(): void {
    const next = this.waiting.shift();
    if (next) {
      next.signal.removeEventListener('abort', next.onAbort);
      next.resolve(); // the slot passes on
    } else this.used--;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The source
// ---------------------------------------------------------------------------------------------------------------

function defaultName(spec: McpServerSpec): string {
  if ('url' in spec) {
    try {
      return new URL(spec.url).host;
    } catch {
      return spec.url;
    }
  }
  return basename(spec.command);
}

function resolve<V>(value: PerEpisode<V> | undefined, ctx: McpEpisodeContext): V | undefined {
  return typeof value === 'function' ? (value as (c: McpEpisodeContext) => V)(ctx) : value;
}

/** A tool source that opens a fresh MCP server (stdio) or session (Streamable HTTP) for every episode. */
export function mcpServer(spec: McpServerSpec, options: McpServerOptions = {}): McpToolSource {
  const name = spec.name ?? defaultName(spec);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  const maxConcurrent = options.maxConcurrent ?? DEFAULT_MAX_CONCURRENT;
  if (!(Number.isInteger(maxConcurrent) && maxConcurrent >= 1)) throw new Error(`MCP server "${name}": maxConcurrent must be a positive integer, got ${maxConcurrent}`);
  if ('url' in spec) {
    try {
      new URL(spec.url);
    } catch {
      throw new Error(`MCP server "${name}": url ${JSON.stringify(spec.url)} is not a valid URL`);
    }
  } else if (typeof spec.command !== 'string' || spec.command.length === 0) {
    throw new Error(`MCP server "${name}": command must be a non-empty string (or give url for a Streamable HTTP server)`);
  }
  if (options.prefix !== undefined && !/^[A-Za-z_][A-Za-z0-9_.-]*$/.test(options.prefix)) {
    throw new Error(`MCP server "${name}": prefix ${JSON.stringify(options.prefix)} must start with a letter or _ and hold only letters, digits, _ . -`);
  }
  const slots = new Slots(maxConcurrent);
  const schemas = new Map<string, JsonSchema>();

  async function open(ctx: ToolSourceContext): Promise<OpenMcpServer> {
    await slots.acquire(ctx.signal);
    const episode: McpEpisodeContext = { task: ctx.task, state: ctx.state, seed: ctx.seed, episodeId: ctx.episodeId };
    let stdio: ProcessGroupStdioTransport | undefined;
    let http: StreamableHTTPClientTransport | undefined;
    const client = new Client({ name: 'longrun', version: '0.1.0' }, { capabilities: {}, jsonSchemaValidator: (sharedValidator ??= new SharedSchemaValidator()) });
    let closed: Promise<void> | undefined;
    let released = false;
    const releaseSlot = () => {
      if (!released) {
        released = true;
        slots.release();
      }
    };

    const shutdown = async (): Promise<void> => {
      try {
        if (http) {
          await http.terminateSession().catch(() => undefined);
          await client.close().catch(() => undefined);
        } else if (stdio) {
          await stdio.close();
          await client.close().catch(() => undefined);
        }
      } finally {
        releaseSlot();
      }
    };
    const close = () => (closed ??= shutdown());

    let commandLine = '';
    const describe = () => `MCP server "${name}" (${'url' in spec ? spec.url : commandLine})`;
    const withStderr = (message: string) => {
      const tail = stdio?.stderrTail().trim();
      return tail ? `${message}\n--- stderr of ${name} (last lines) ---\n${tail}` : message;
    };
    const envError = (what: string, cause?: unknown) => new EpisodeError(withStderr(`${describe()} ${what}`), { cause, env: name });

    try {
      if ('url' in spec) {
        http = new StreamableHTTPClientTransport(new URL(spec.url), spec.headers ? { requestInit: { headers: spec.headers } } : undefined);
      } else {
        let args: string[] | undefined;
        let env: Record<string, string> | undefined;
        let cwd: string | undefined;
        try {
          args = resolve(spec.args, episode) ?? [];
          env = resolve(spec.env, episode);
          cwd = resolve(spec.cwd, episode);
        } catch (error) {
          throw new EpisodeError(`MCP server "${name}": its args/env/cwd function threw: ${messageOf(error)}`, { cause: error, env: name });
        }
        if (!Array.isArray(args) || args.some((a) => typeof a !== 'string')) {
          throw new EpisodeError(`MCP server "${name}": args must be an array of strings, got ${JSON.stringify(args)}`, { env: name });
        }
        commandLine = [spec.command, ...args].join(' ');
        if (commandLine.length > 200) commandLine = `${commandLine.slice(0, 197)}...`;
        stdio = new ProcessGroupStdioTransport(spec.command, args, { ...getDefaultEnvironment(), ...(env ?? {}) }, cwd);
      }
      const transport: Transport = http ?? stdio!;
      const startSignal = AbortSignal.any([ctx.signal, AbortSignal.timeout(startTimeoutMs)]);
      let listed: McpTool[] = [];
      try {
        await client.connect(transport, { signal: startSignal, timeout: startTimeoutMs });
        let cursor: string | undefined;
        do {
          const page = await client.listTools(cursor ? { cursor } : undefined, { signal: startSignal, timeout: startTimeoutMs });
          listed.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor);
      } catch (error) {
        if (ctx.signal.aborted) throw ctx.signal.reason ?? error;
        await stdio?.close().catch(() => undefined); // so the exit status and the whole stderr are in
        if (stdio?.crashed) throw envError(stdio.exit!.startsWith('could not') ? stdio.exit! : `${stdio.exit} before it finished starting`, error);
        if (startSignal.aborted || (error instanceof McpError && error.code === ErrorCode.RequestTimeout)) {
          throw envError(`did not finish starting (initialize and tools/list) within ${startTimeoutMs} ms`, error);
        }
        throw envError(`failed to start: ${messageOf(error)}`, error);
      }
      if (options.include) {
        const byName = new Map(listed.map((t) => [t.name, t]));
        const missing = options.include.filter((n) => !byName.has(n));
        if (missing.length > 0) {
          throw envError(`offers no tool ${missing.map((n) => JSON.stringify(n)).join(', ')} (it offers: ${listed.map((t) => t.name).join(', ')})`);
        }
        listed = options.include.map((n) => byName.get(n)!);
      }

      const tools: ToolDef[] = listed.map((mcpTool) => {
        const toolName = options.prefix ? `${options.prefix}_${mcpTool.name}` : mcpTool.name;
        return {
          name: toolName,
          description: mcpTool.description ?? mcpTool.title ?? '',
          parameters: parametersOf(mcpTool, schemas),
          timeoutMs,
          kind: mcpToolKind(mcpTool),
          async run(args: unknown, toolCtx: ToolContext): Promise<string> {
            if (stdio?.crashed) throw envError(`${stdio!.exit} during the episode (before a call to ${mcpTool.name})`);
            if (closed) throw new Error(`MCP server "${name}" is closed`);
            let result: CallToolResult;
            try {
              result = (await client.callTool(
                { name: mcpTool.name, arguments: (args ?? {}) as Record<string, unknown> },
                undefined,
                { signal: toolCtx?.signal, timeout: timeoutMs },
              )) as CallToolResult;
            } catch (error) {
              if (toolCtx?.signal?.aborted) throw error instanceof Error ? error : new Error(messageOf(error));
              if (error instanceof McpError && error.code === ErrorCode.RequestTimeout) {
                throw new Error(`tool ${toolName} of MCP server "${name}" timed out after ${timeoutMs} ms`, { cause: error });
              }
              if (isConnectionFailure(error)) {
                if (stdio) await Promise.race([stdio.close(), sleep(TERM_GRACE_MS)]);
                const how = stdio?.crashed ? stdio.exit : `lost its connection (${messageOf(error)})`;
                throw envError(`${how} during a call to ${mcpTool.name}`, error);
              }
              throw new Error(messageOf(error), { cause: error }); // a JSON-RPC error answer: the agent's call was refused
            }
            const text = renderMcpContent(result);
            if (result.isError) throw new Error(text || `tool ${toolName} failed (no message)`);
            return text;
          },
        };
      });

      return {
        tools,
        close,
        handle: client,
        pid: stdio?.pid,
        stderrTail: () => stdio?.stderrTail() ?? '',
      };
    } catch (error) {
      await close().catch(() => undefined);
      throw error;
    }
  }

  return {
    name,
    open,
    get openCount() {
      return slots.inUse;
    },
  };
}

/**
 * A fake OpenAI-compatible server on 127.0.0.1 for tests: `POST /v1/chat/completions` answers from a script
 * function that sees the parsed request and the request count; every request is recorded.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeReply {
  status?: number;
  /** A chat.completion body, or any JSON for error replies. */
  body?: unknown;
  /** Raw text instead of JSON (to send broken bodies). */
  raw?: string;
  headers?: Record<string, string>;
  delayMs?: number;
}

export interface FakeRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

export type FakeScript = (req: FakeRequest, index: number) => FakeReply | Promise<FakeReply>;

export interface FakeOpenAI {
  url: string;
  requests: FakeRequest[];
  close(): Promise<void>;
}

let nextId = 0;

/** A chat.completion body with one choice. */
export function completion(message: { content?: string | null; tool_calls?: unknown[] }, usage = { prompt_tokens: 10, completion_tokens: 5 }): unknown {
  return {
    id: `chatcmpl-${nextId++}`,
    object: 'chat.completion',
    created: 0,
    model: 'fake',
    choices: [{ index: 0, finish_reason: message.tool_calls?.length ? 'tool_calls' : 'stop', message: { role: 'assistant', content: message.content ?? null, ...(message.tool_calls ? { tool_calls: message.tool_calls } : {}) } }],
    usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
  };
}

export function toolCall(id: string, name: string, args: string | Record<string, unknown>): unknown {
  return { id, type: 'function', function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) } };
}

export async function startFakeOpenAI(script: FakeScript): Promise<FakeOpenAI> {
  const requests: FakeRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null');
      } catch {
        body = null;
      }
      const entry: FakeRequest = { path: req.url ?? '', headers: req.headers, body };
      const index = requests.push(entry) - 1;
      let reply: FakeReply;
      try {
        reply = req.url?.endsWith('/chat/completions') ? await script(entry, index) : { status: 404, body: { error: { message: 'not found' } } };
      } catch (err) {
        reply = { status: 500, body: { error: { message: `fake script failed: ${(err as Error).message}` } } };
      }
      if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
      if (res.destroyed) return;
      const text = reply.raw ?? JSON.stringify(reply.body ?? {});
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
      res.end(text);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

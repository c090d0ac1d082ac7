/** Shared helpers for the serve tests: JSON requests against a started server, and raw sockets for bad clients. */
import { connect } from 'node:net';

export interface ApiReply {
  status: number;
  body: any;
  headers: Headers;
}

export async function api(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiReply> {
  const init: RequestInit = { method, headers: { 'content-type': 'application/json', ...headers }, signal: AbortSignal.timeout(20_000) };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const r = await fetch(base + path, init);
  const text = await r.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep the raw text
  }
  return { status: r.status, body: parsed, headers: r.headers };
}

/** Sends raw bytes on a fresh socket and resolves with whatever came back before close (or after `waitMs`). */
export function rawRequest(port: number, data: string, options: { waitMs?: number; destroyAfterWrite?: boolean } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let out = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(out);
    }, options.waitMs ?? 2000);
    socket.on('connect', () => {
      socket.write(data);
      if (options.destroyAfterWrite) {
        clearTimeout(timer);
        socket.destroy();
        resolve('');
      }
    });
    socket.on('data', (d) => (out += d.toString('utf8')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    socket.on('error', (e) => {
      clearTimeout(timer);
      if (options.destroyAfterWrite) resolve('');
      else reject(e);
    });
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Small helpers for `node:http` servers: bounded JSON bodies, JSON replies, bearer-token checks. */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { badRequest, HttpError } from './http-errors.ts';

/**
 * Reads a request body of at most `maxBytes`. A declared or streamed size over the limit is a 413; a client that
 * disconnects mid-body makes the promise reject with `code: 'client_aborted'` (nobody is left to answer).
 */
export function readRawBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    return Promise.reject(tooLarge(maxBytes, declared));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      reject(err);
    };
    req.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > maxBytes) {
        chunks.length = 0;
        fail(tooLarge(maxBytes, size));
        // Stop buffering; keep draining so the 413 can still be written on this socket.
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('aborted', () => fail(new HttpError(499, 'client_aborted', 'The client closed the connection before sending the whole body')));
    req.on('error', (err) => fail(new HttpError(499, 'client_aborted', `Request stream error: ${err.message}`)));
    req.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(Buffer.concat(chunks));
    });
  });
}

/**
 * Reads a request body of at most `maxBytes` (as `readRawBody`) and parses it as JSON (an empty body is `undefined`);
 * bytes that are not JSON are a 400.
 */
export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const text = (await readRawBody(req, maxBytes)).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, 'malformed_json', `The request body is not valid JSON: ${(err as Error).message}`);
  }
}

function tooLarge(maxBytes: number, size: number): HttpError {
  return new HttpError(413, 'body_too_large', `The request body (${size} bytes or more) exceeds the server's limit of ${maxBytes} bytes (--max-body)`);
}

/** Writes a JSON reply; a client that already left is ignored. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.writableEnded || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export function sendError(res: ServerResponse, err: HttpError): void {
  sendJson(res, err.status, err.toBody(), err.headers);
}

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Constant-time comparison of a presented bearer token with the expected one (hashing first equalises lengths). */
export function tokenMatches(presented: string, expected: string): boolean {
  return timingSafeEqual(digest(presented), digest(expected));
}

/** Throws 401 unless the request carries `Authorization: Bearer <token>`. */
export function checkBearer(req: IncomingMessage, token: string): void {
  const header = req.headers.authorization;
  const challenge = { 'www-authenticate': 'Bearer realm="longrun"' };
  if (typeof header !== 'string' || !/^Bearer\s+/i.test(header)) {
    throw new HttpError(401, 'unauthorized', 'This server needs a bearer token: send the header "Authorization: Bearer <token>"', challenge);
  }
  if (!tokenMatches(header.replace(/^Bearer\s+/i, '').trim(), token)) {
    throw new HttpError(401, 'unauthorized', 'The bearer token is wrong', challenge);
  }
}

/**
 * Whether a JSON value nests deeper than `limit` (objects and arrays), found with an explicit stack: a body nested
 * 500,000 deep costs no JS stack, and is refused before anything recursive (validation, the env, JSON replies)
 * sees it.
 */
export function jsonDepthExceeds(value: unknown, limit: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

/** The path's `{id}` parts, percent-decoded; a malformed escape (`%ZZ`) is a 400, not a server error. */
export function decodePathParams(parts: readonly string[]): string[] {
  return parts.map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      throw new HttpError(400, 'bad_request', `Malformed percent-encoding in the request path: ${JSON.stringify(p.slice(0, 100))}`);
    }
  });
}

export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** The host name of a Host header (`name`, `name:port`, `[v6]:port`), or null when it cannot be read. */
function hostName(header: string): string | null {
  const m = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::\d{1,5})?$/i.exec(header.trim());
  return m ? m[1] : null;
}

/**
 * For a server on loopback without a token: only requests addressed to a loopback name (Host) and, when a browser
 * says where it comes from (Origin), from a loopback page. A web page elsewhere cannot then drive the server: its
 * cross-origin POSTs carry its Origin, and a DNS-rebound name of its own arrives as its Host. Clients that send no
 * Origin (curl, Python) are unaffected.
 */
export function checkLocalRequest(req: IncomingMessage): void {
  const host = req.headers.host;
  if (host !== undefined) {
    const name = hostName(host);
    if (name === null || !isLoopbackHost(name)) {
      throw new HttpError(403, 'forbidden_host', `This server has no token and only answers requests addressed to a loopback name (localhost, 127.0.0.1, [::1]); this one was for Host ${JSON.stringify(host.slice(0, 100))}. Connect through a loopback address, or start the server with a token.`);
    }
  }
  const origin = req.headers.origin;
  if (origin !== undefined) {
    let ok: boolean;
    try {
      const u = new URL(origin);
      ok = (u.protocol === 'http:' || u.protocol === 'https:') && isLoopbackHost(u.hostname);
    } catch {
      ok = false;
    }
    if (!ok) {
      throw new HttpError(403, 'forbidden_origin', `This server has no token and refuses requests from web pages that are not on this machine (Origin ${JSON.stringify(origin.slice(0, 100))}). Start it with a token to allow other clients.`);
    }
  }
}

/** The request's path without trailing slashes (`/` for none); a target that is not a URL path is a 400. */
export function requestPath(req: IncomingMessage): string {
  try {
    return new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '') || '/';
  } catch {
    throw badRequest('bad_request', 'Malformed request target');
  }
}

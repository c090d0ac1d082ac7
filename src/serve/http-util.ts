/** Small helpers for `node:http` servers: bounded JSON bodies, JSON replies, bearer-token checks. */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpError } from './http-errors.ts';

/**
 * Reads a request body of at most `maxBytes` and parses it as JSON (an empty body is `undefined`). A declared or
 * streamed size over the limit is a 413; bytes that are not JSON are a 400. A client that disconnects mid-body makes
 * the promise reject with `code: 'client_aborted'` (nobody is left to answer).
 */
export function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
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
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.trim() === '') return resolve(undefined);
      try {
        resolve(JSON.parse(text));
      } catch (err) {
        reject(new HttpError(400, 'malformed_json', `The request body is not valid JSON: ${(err as Error).message}`));
      }
    });
  });
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

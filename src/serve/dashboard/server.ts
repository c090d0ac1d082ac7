/**
 * `longrun dashboard RUN_DIR`: a small read-only web server over a run folder.
 *
 *   GET /                       the page (page.ts)
 *   GET /api/run                {dir, metrics: [file names], trajectories: [file names]}
 *   GET /api/metrics?file=F     {series: [{group, key, points: [[step, value]]}], skipped}
 *   GET /api/trajectories?file=F  {items: [summary per episode], skipped}
 *   GET /api/trajectory?file=F&index=I  the episode's JSON line
 *
 * `file` must be one of the names /api/run lists (anything else is a 404), so no path ever comes from the client.
 * Files are re-read on every request: a run that is still writing shows its latest lines on reload. On loopback
 * (the default) it answers only requests addressed to a loopback name and not sent by a foreign web page (403), so
 * another site cannot read a run through DNS rebinding.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { badRequest, HttpError, notFound } from '../http-errors.ts';
import { checkLocalRequest, isLoopbackHost, sendError, sendJson } from '../http-util.ts';
import { DASHBOARD_HTML } from './page.ts';
import { listRunFiles, metricSeries, readJsonl, summarizeTrajectory } from './run-files.ts';

export interface DashboardOptions {
  runDir: string;
  host?: string;
  port?: number;
  log?: (line: string) => void;
}

export interface DashboardHandle {
  url: string;
  close(): Promise<void>;
}

export async function startDashboard(o: DashboardOptions): Promise<DashboardHandle> {
  const dir = resolve(o.runDir);
  listRunFiles(dir); // fail early on a folder that cannot be read
  const fileParam = (url: URL, kind: 'metrics' | 'trajectories') => {
    const name = url.searchParams.get('file');
    if (!name) throw badRequest('missing_file', 'Pass ?file=<name> (GET /api/run lists the files)');
    if (!listRunFiles(dir)[kind].includes(name)) throw notFound('unknown_file', `No ${kind} file named ${JSON.stringify(name)} in the run folder`);
    return join(dir, name);
  };
  const localOnly = isLoopbackHost(o.host ?? '127.0.0.1');
  const server = createServer((req, res) => {
    res.on('error', () => {});
    try {
      if (localOnly) checkLocalRequest(req);
      if (req.method !== 'GET') throw new HttpError(405, 'method_not_allowed', 'The dashboard is read-only (GET only)', { allow: 'GET' });
      let url: URL;
      try {
        url = new URL(req.url ?? '/', 'http://localhost');
      } catch {
        throw badRequest('bad_request', 'Malformed request target');
      }
      switch (url.pathname) {
        case '/':
        case '/index.html':
          res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'" });
          res.end(DASHBOARD_HTML);
          return;
        case '/api/run':
          return sendJson(res, 200, { dir, ...listRunFiles(dir) });
        case '/api/metrics': {
          const { rows, skipped } = readJsonl(fileParam(url, 'metrics'));
          return sendJson(res, 200, { series: metricSeries(rows), skipped });
        }
        case '/api/trajectories': {
          const { rows, skipped } = readJsonl(fileParam(url, 'trajectories'));
          return sendJson(res, 200, { items: rows.map(summarizeTrajectory), skipped });
        }
        case '/api/trajectory': {
          const { rows } = readJsonl(fileParam(url, 'trajectories'));
          const index = Number(url.searchParams.get('index'));
          if (!Number.isInteger(index) || index < 0 || index >= rows.length) throw notFound('unknown_trajectory', `No trajectory #${url.searchParams.get('index')} (the file has ${rows.length})`);
          return sendJson(res, 200, rows[index]);
        }
        default:
          throw notFound('not_found', `No page ${url.pathname}`);
      }
    } catch (err) {
      sendError(res, err instanceof HttpError ? err : new HttpError(500, 'internal_error', (err as Error).message));
    }
  });
  await new Promise<void>((r, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 8080, o.host ?? '127.0.0.1', () => r());
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://${o.host ?? '127.0.0.1'}:${port}`;
  o.log?.(`longrun dashboard for ${dir} on ${url}`);
  return {
    url,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/**
 * `longrun dashboard RUN_DIR`: a small read-only web server over a run folder (run-files.ts says which shapes it
 * finds: a demo or `longrun train` run with its stages, a `longrun eval --out` folder, or a folder of runs).
 *
 *   GET /                       the page (page.ts)
 *   GET /api/overview           the headline, panels, stages and episode sets (overview.ts)
 *   GET /api/run                {dir, runs: [{name, stages}], metrics: [files], trajectories: [files]}
 *   GET /api/metrics?file=F     {series: [{group, key, points: [[step, value]]}], skipped}
 *   GET /api/trajectories?file=F[&set=S]  {items: [summary per episode], skipped}; S an episode set's id
 *   GET /api/trajectory?file=F&index=I    the episode's JSON line
 *
 * `file` must be one of the relative paths /api/run lists (anything else is a 404), so no path ever comes from the
 * client. Files are re-read on every request: a run that is still writing shows its latest lines on reload. On
 * loopback (the default) it answers only requests addressed to a loopback name and not sent by a foreign web page
 * (403), so another site cannot read a run through DNS rebinding.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { badRequest, HttpError, notFound } from '../http-errors.ts';
import { checkLocalRequest, isLoopbackHost, sendError, sendJson } from '../http-util.ts';
import { DASHBOARD_HTML } from './page.ts';
import { buildOverview, parseSetId, setEpisodes } from './overview.ts';
import { discoverRun, metricSeries, readJsonl } from './run-files.ts';

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
  discoverRun(dir); // fail early on a folder that cannot be read
  const known = (kind: 'metrics' | 'trajectories', name: string) => {
    if (!discoverRun(dir)[kind].includes(name)) throw notFound('unknown_file', `No ${kind} file named ${JSON.stringify(name)} in the run folder`);
    return join(dir, name);
  };
  const fileParam = (url: URL, kind: 'metrics' | 'trajectories') => {
    const name = url.searchParams.get('file');
    if (!name) throw badRequest('missing_file', 'Pass ?file=<name> (GET /api/run lists the files)');
    return known(kind, name);
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
        case '/favicon.ico':
          res.writeHead(204);
          res.end();
          return;
        case '/api/overview':
          return sendJson(res, 200, buildOverview(dir, o.runDir));
        case '/api/run': {
          const layout = discoverRun(dir);
          return sendJson(res, 200, { dir: o.runDir, ...layout });
        }
        case '/api/metrics': {
          const { rows, skipped } = readJsonl(fileParam(url, 'metrics'));
          return sendJson(res, 200, { series: metricSeries(rows), skipped });
        }
        case '/api/trajectories': {
          const set = url.searchParams.get('set');
          const { file, kind, step } = set !== null ? parseSetId(set) : { file: null, kind: undefined, step: undefined };
          const { rows, skipped } = readJsonl(file !== null ? known('trajectories', file) : fileParam(url, 'trajectories'));
          return sendJson(res, 200, { items: setEpisodes(rows, kind, step), skipped });
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

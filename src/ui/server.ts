/**
 * `servelab ui`: a read-only HTTP server over the store. The page (./page.ts) fetches JSON + server-rendered,
 * escaped HTML fragments and SVG charts (the report's own modules), and an SSE stream tells it when to refetch:
 * the server polls the store's data_version and the live servers' log sizes every `pollMs`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stat } from 'node:fs/promises';
import type { Db } from '../store/db.js';
import { reportFigures } from '../report/figures.js';
import { comparisonHtml, driftNotesHtml, environmentHtml, figuresHtml, runFactsHtml, verdictTableHtml } from '../report/html.js';
import { buildRunReport, compareRuns } from '../report/model.js';
import { getServer, listExperiments, loadRunData, openStoreForReading, runContentKey, runProgress, runServers, storeVersion } from '../report/queries.js';
import type { TrialRecord } from '../store/types.js';
import { readLogTail } from '../util/log-tail.js';
import { liveFigures, type ProgressPoint } from './live.js';
import { APP_JS, PAGE_HTML } from './page.js';

export interface UiOptions {
  storePath: string;
  host: string;
  /** 0 picks a free port. */
  port: number;
  pollMs?: number;
}

export interface UiServer {
  url: string;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.has(host) || host.startsWith('127.');
}

export async function startUi(options: UiOptions): Promise<UiServer> {
  const db = openStoreForReading(options.storePath);
  const state = new UiState(db);
  const clients = new Set<ServerResponse>();
  const server = createServer((request, response) => {
    handle(state, clients, request, response, isLoopbackHost(options.host)).catch((error: unknown) => {
      if (!response.headersSent) send(response, 500, 'text/plain; charset=utf-8', `internal error: ${(error as Error).message}`);
      else response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const poller = setInterval(() => {
    state.poll().then(
      (events) => {
        for (const event of events) broadcast(clients, event.name, event.data);
      },
      () => undefined,
    );
  }, options.pollMs ?? 500);
  // SSE comments keep idle connections (and proxies) from timing out.
  const heartbeat = setInterval(() => broadcast(clients, undefined, 'ping'), 15_000);
  const { port } = server.address() as AddressInfo;
  const shownHost = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${shownHost}:${port}/`,
    close: async () => {
      clearInterval(poller);
      clearInterval(heartbeat);
      for (const client of clients) client.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      db.close();
    },
  };
}

interface RunView {
  run: { id: number; experimentName: string; status: string; startedAt: string; finishedAt: string | null; message: string | null };
  trials: TrialRecord[];
  html: { facts: string; verdicts: string; figures: string; notes: string; environment: string };
}

/** What the server remembers: the store version, log sizes, in-flight throughput history and rendered views. */
class UiState {
  private version: number;
  private logSizes = new Map<number, number>();
  private progress = new Map<number, ProgressPoint[]>();
  private views = new Map<number, { key: string; view: RunView }>();
  private diffs = new Map<string, { key: string; view: { drifted: boolean; html: string } }>();

  constructor(readonly db: Db) {
    this.version = storeVersion(db);
    this.recordProgress();
  }

  async poll(): Promise<Array<{ name: string; data: string }>> {
    const events: Array<{ name: string; data: string }> = [];
    const version = storeVersion(this.db);
    if (version !== this.version) {
      this.version = version;
      this.recordProgress();
      events.push({ name: 'change', data: JSON.stringify({ version }) });
    }
    const grown: number[] = [];
    for (const server of this.liveServers()) {
      const size = await stat(server.logPath).then((info) => info.size, () => 0);
      if (size !== (this.logSizes.get(server.id) ?? 0)) grown.push(server.id);
      this.logSizes.set(server.id, size);
    }
    if (grown.length > 0) events.push({ name: 'log', data: JSON.stringify({ servers: grown }) });
    return events;
  }

  /**
   * The rendered report of a run, recomputed only when its content changed: a run in flight updates its progress
   * row several times a second, and re-running the bootstrap and the charts each time would steal CPU from the
   * very benchmark being watched.
   */
  runView(runId: number): RunView | undefined {
    const key = runContentKey(this.db, runId);
    if (key === undefined) return undefined;
    const cached = this.views.get(runId);
    if (cached?.key === key) return cached.view;
    const data = loadRunData(this.db, runId)!;
    const report = buildRunReport(data);
    const view: RunView = {
      run: { id: runId, experimentName: report.experimentName, status: report.status, startedAt: report.startedAt, finishedAt: report.finishedAt ?? null, message: report.message ?? null },
      trials: data.trials,
      html: {
        facts: runFactsHtml(report),
        verdicts: verdictTableHtml(report),
        figures: figuresHtml(reportFigures(report)),
        notes: driftNotesHtml(report),
        environment: environmentHtml(report),
      },
    };
    this.views.set(runId, { key, view });
    return view;
  }

  diffView(runA: number, runB: number): { drifted: boolean; html: string } | undefined {
    const key = JSON.stringify([runContentKey(this.db, runA), runContentKey(this.db, runB)]);
    const cacheKey = `${runA}:${runB}`;
    const cached = this.diffs.get(cacheKey);
    if (cached?.key === key) return cached.view;
    const a = loadRunData(this.db, runA, { latencies: false });
    const b = loadRunData(this.db, runB, { latencies: false });
    if (!a || !b) return undefined;
    const comparison = compareRuns(a, b);
    const view = { drifted: comparison.drifted, html: comparisonHtml(comparison) };
    this.diffs.set(cacheKey, { key, view });
    return view;
  }

  progressOf(runId: number): ProgressPoint[] {
    return this.progress.get(runId) ?? [];
  }

  private liveServers(): Array<{ id: number; logPath: string }> {
    return this.db.prepare("SELECT s.id, s.log_path AS logPath FROM servers s JOIN runs r ON r.id = s.run_id WHERE r.status = 'running'").all() as Array<{
      id: number;
      logPath: string;
    }>;
  }

  /** One point per progress update of each running run: the throughput of each trial while it runs. */
  private recordProgress(): void {
    const rows = this.db.prepare("SELECT p.run_id FROM progress p JOIN runs r ON r.id = p.run_id WHERE r.status = 'running'").all() as Array<{ run_id: number }>;
    for (const { run_id: runId } of rows) {
      const progress = runProgress(this.db, runId);
      if (!progress) continue;
      const atMs = Date.parse(progress.updatedAt);
      const history = this.progress.get(runId) ?? [];
      if (history.at(-1)?.atMs === atMs) continue;
      history.push({ atMs, trialLabel: progress.trialLabel, outputTokensPerSecond: progress.outputTokensPerSecond });
      this.progress.set(runId, history.slice(-600));
    }
  }
}

async function handle(state: UiState, clients: Set<ServerResponse>, request: IncomingMessage, response: ServerResponse, loopbackOnly: boolean): Promise<void> {
  // A page on another site can resolve its own name to 127.0.0.1 (DNS rebinding); only our own names may ask.
  const hostHeader = (request.headers.host ?? '').replace(/:\d+$/, '').replace(/^\[|\]$/g, '');
  if (loopbackOnly && !isLoopbackHost(hostHeader)) return send(response, 403, 'text/plain; charset=utf-8', 'forbidden host');
  if (request.method !== 'GET') return send(response, 405, 'text/plain; charset=utf-8', 'servelab ui is read-only');
  const url = new URL(request.url ?? '/', 'http://ui.invalid');
  const db = state.db;
  let match: RegExpMatchArray | null;

  if (url.pathname === '/') return send(response, 200, 'text/html; charset=utf-8', PAGE_HTML);
  if (url.pathname === '/favicon.ico') return send(response, 204, 'image/x-icon', '');
  if (url.pathname === '/app.js') return send(response, 200, 'text/javascript; charset=utf-8', APP_JS);
  if (url.pathname === '/events') return openEvents(clients, request, response, storeVersion(db));
  if (url.pathname === '/api/experiments') return sendJson(response, listExperiments(db));
  if ((match = url.pathname.match(/^\/api\/runs\/(\d+)$/))) {
    const runId = Number(match[1]);
    const view = state.runView(runId);
    if (!view) return sendJson(response, { error: `run ${runId} is not in the store` }, 404);
    const live = view.run.status === 'running';
    return sendJson(response, {
      run: view.run,
      servers: runServers(db, runId),
      progress: runProgress(db, runId) ?? null,
      html: { ...view.html, live: live ? figuresHtml(liveFigures(view.run.startedAt, view.trials, state.progressOf(runId))) : '' },
    });
  }
  if ((match = url.pathname.match(/^\/api\/servers\/(\d+)\/log$/))) {
    const server = getServer(db, Number(match[1]));
    if (!server) return sendJson(response, { error: 'no such server' }, 404);
    return sendJson(response, { serverId: server.id, logPath: server.logPath, ...(await readLogTail(server.logPath)) });
  }
  if (url.pathname === '/api/diff') {
    const diff = state.diffView(Number(url.searchParams.get('a')), Number(url.searchParams.get('b')));
    if (!diff) return sendJson(response, { error: 'pick two runs of the store' }, 404);
    return sendJson(response, diff);
  }
  send(response, 404, 'text/plain; charset=utf-8', 'not found');
}

function openEvents(clients: Set<ServerResponse>, request: IncomingMessage, response: ServerResponse, version: number): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
  response.write(`retry: 1000\nevent: change\ndata: ${JSON.stringify({ version })}\n\n`);
  clients.add(response);
  request.on('close', () => clients.delete(response));
}

function broadcast(clients: Set<ServerResponse>, name: string | undefined, data: string): void {
  const frame = name === undefined ? `: ${data}\n\n` : `event: ${name}\ndata: ${data}\n\n`;
  for (const client of clients) client.write(frame);
}

function sendJson(response: ServerResponse, body: unknown, status = 200): void {
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(body));
}

function send(response: ServerResponse, status: number, contentType: string, body: string): void {
  response.writeHead(status, {
    'content-type': contentType,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    // Everything comes from this server and no inline script may run: even a string that slipped past escaping
    // could not execute (inline styles are needed by the SVG charts).
    'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:",
  });
  response.end(body);
}

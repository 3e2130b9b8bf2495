/**
 * `servelab ui`: a read-only HTTP server over the store. The page (./page.ts) fetches JSON + server-rendered,
 * escaped HTML fragments and SVG charts (the report's own modules), and an SSE stream tells it when to refetch:
 * the server polls the store's data_version and the live servers' log sizes every `pollMs`.
 */

import { timingSafeEqual } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { measuredOnly } from '../experiment/analysis/search.js';
import { storedExperimentOf } from '../experiment/spec/stored.js';
import { hasSpecFigures } from '../experiment/text/best-format.js';
import { bisectReportParts } from '../report/bisect.js';
import { bestConfigHtml, specTableHtml } from '../report/campaign-html.js';
import { compareRuns } from '../report/compare.js';
import { reportFigures } from '../report/figures.js';
import { comparisonHtml, environmentHtml, figuresHtml, notesHtml, runFactsHtml, trialTableHtml, verdictSectionHtml } from '../report/html.js';
import { laneReportParts } from '../report/lanes.js';
import { machineStateHtml } from '../report/machine.js';
import { buildRunReport } from '../report/model.js';
import { qualityHtml } from '../report/quality-html.js';
import { loadRunData } from '../report/queries.js';
import { searchReportParts } from '../report/search.js';
import type { Db } from '../store/db.js';
import { getRun } from '../store/queries.js';
import {
  getServer,
  listExperiments,
  liveServerLogs,
  openStoreForReading,
  runContentKey,
  runningRunsWithProgress,
  runProgress,
  runRedactPatterns,
  runServers,
  storeVersion,
} from '../store/reads.js';
import type { TrialRecord } from '../store/types.js';
import { isUserError } from '../util/errors.js';
import { readLogTail } from '../util/log-tail.js';
import { redactor } from '../util/redact.js';
import { latestPerLane, liveFigures, type ProgressPoint } from './live.js';
import { APP_JS, PAGE_HTML } from './page.js';

export interface UiOptions {
  storePath: string;
  host: string;
  /** 0 picks a free port. */
  port: number;
  pollMs?: number;
  /**
   * When set, every request must carry it (`?token=` once, which sets a cookie, or `Authorization: Bearer`):
   * anyone who can reach a non-loopback bind could otherwise read every result and server log.
   */
  token?: string;
}

export interface UiServer {
  url: string;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** A bind address that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.has(host) || /^127(\.\d{1,3}){3}$/.test(host);
}

const hostPort = (host: string, port: number): string => `${host.includes(':') ? `[${host}]` : host}:${port}`.toLowerCase();

/**
 * The exact Host headers the UI answers. A page on another site can resolve its own name to 127.0.0.1 (DNS
 * rebinding) and then read the UI from the victim's browser, so a name merely starting with "127." is not enough:
 * only the loopback names with our port, or the address we were bound to. A wildcard bind (0.0.0.0, ::) is
 * reached by this machine's own addresses and host name.
 */
export function allowedHosts(boundHost: string, port: number): Set<string> {
  const names = new Set(['127.0.0.1', 'localhost', '::1', boundHost]);
  if (boundHost === '0.0.0.0' || boundHost === '::') {
    names.add(hostname());
    for (const addresses of Object.values(networkInterfaces())) for (const address of addresses ?? []) names.add(address.address);
  }
  return new Set([...names].map((name) => hostPort(name, port)));
}

/** Whether a request carries the token: as `?token=`, the cookie that sets, or a bearer header. Constant time. */
function hasToken(request: IncomingMessage, url: URL, token: string): boolean {
  const cookie = /(?:^|;\s*)servelab_token=([^;]+)/.exec(request.headers.cookie ?? '')?.[1];
  const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
  const expected = Buffer.from(token);
  return [url.searchParams.get('token'), cookie, bearer].some((given) => {
    const actual = Buffer.from(given ?? '');
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  });
}

export async function startUi(options: UiOptions): Promise<UiServer> {
  const db = openStoreForReading(options.storePath);
  const state = new UiState(db);
  const clients = new Set<ServerResponse>();
  let guard: Guard = { hosts: new Set() };
  const server = createServer((request, response) => {
    handle(state, clients, request, response, guard).catch((error: unknown) => {
      // A stored row that cannot be read (named by the store's decoders) is the store's state, not a server fault.
      if (!response.headersSent && isUserError(error)) sendJson(response, { error: error.message, hint: error.hint }, 422);
      else if (!response.headersSent) send(response, 500, 'text/plain; charset=utf-8', `internal error: ${(error as Error).message}`);
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
  guard = { hosts: allowedHosts(options.host, port), ...(options.token !== undefined && { token: options.token }) };
  return {
    url: `http://${hostPort(options.host, port)}/${options.token === undefined ? '' : `?token=${encodeURIComponent(options.token)}`}`,
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
  html: {
    facts: string;
    verdicts: string;
    best: string;
    quality: string;
    spec: string;
    /** The `servelab bisect` answer this run is part of (a round, or the run bisected); empty otherwise. */
    bisect: string;
    /** The lane report of a run on lanes (the report's section); empty otherwise. */
    lanes: string;
    /** A search's standing and response surface (report/search.ts); empty for a run that is no search. */
    search: string;
    figures: string;
    trials: string;
    notes: string;
    environment: string;
    machine: string;
  };
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
    for (const server of liveServerLogs(this.db)) {
      const size = await stat(server.logPath).then(
        (info) => info.size,
        () => 0,
      );
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
      run: {
        id: runId,
        experimentName: report.experimentName,
        status: report.status,
        startedAt: report.startedAt,
        finishedAt: report.finishedAt ?? null,
        message: report.message ?? null,
      },
      trials: data.trials,
      html: {
        facts: runFactsHtml(report),
        verdicts: verdictSectionHtml(report),
        // The conclusion's best config and ranking (infeasible configs with their reasons), as in the report.
        best: data.conclusion?.best ? `<h2>Best config</h2>${bestConfigHtml(storedExperimentOf(data.run), data.conclusion.best)}` : '',
        // Output equivalence and accuracy next to the verdicts they qualify, as in the report's campaign section.
        quality: qualityHtml(data.conclusion),
        // Acceptance, accepted length and verify-step time side by side, as in the report's campaign section.
        spec: hasSpecFigures(data.trials)
          ? `<h2>Speculative decoding</h2>${specTableHtml(measuredOnly(storedExperimentOf(data.run), data.trials), data.trials)}`
          : '',
        bisect: bisectReportParts(this.db, runId).html,
        lanes: laneReportParts(data.conclusion?.lanes).html,
        // A search's standing and response surface, as in the report.
        search: searchReportParts(data.conclusion?.search).html,
        figures: figuresHtml(reportFigures(report)),
        trials: trialTableHtml(report),
        notes: notesHtml(report),
        environment: environmentHtml(report),
        machine: machineStateHtml(report.machine),
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
    const a = loadRunData(this.db, runA, { latencies: false, conclusion: false });
    const b = loadRunData(this.db, runB, { latencies: false, conclusion: false });
    if (!a || !b) return undefined;
    const comparison = compareRuns(a, b);
    const view = { drifted: comparison.drifted, html: comparisonHtml(comparison) };
    this.diffs.set(cacheKey, { key, view });
    return view;
  }

  progressOf(runId: number): ProgressPoint[] {
    return this.progress.get(runId) ?? [];
  }

  /**
   * One point per progress update of each running run: the throughput of each trial while it runs. Called on every
   * poll and before each answer, so the in-flight panel and its chart are both drawn from the newest point.
   */
  recordProgress(): void {
    for (const runId of runningRunsWithProgress(this.db)) {
      const rows = runProgress(this.db, runId);
      // Only the lanes the store has now: each one's newest point is then its stored row.
      const lanes = new Set(rows.map((row) => row.lane));
      const history = (this.progress.get(runId) ?? []).filter((point) => lanes.has(point.progress.lane));
      for (const progress of rows) {
        const atMs = Date.parse(progress.updatedAt);
        if (history.findLast((point) => point.progress.lane === progress.lane)?.atMs === atMs) continue;
        history.push({ atMs, progress });
      }
      this.progress.set(runId, history.slice(-600));
    }
  }
}

/** Who may ask: the Host headers answered and, for shared binds, the token. */
interface Guard {
  hosts: Set<string>;
  token?: string;
}

async function handle(state: UiState, clients: Set<ServerResponse>, request: IncomingMessage, response: ServerResponse, guard: Guard): Promise<void> {
  if (!guard.hosts.has((request.headers.host ?? '').toLowerCase())) return send(response, 403, 'text/plain; charset=utf-8', 'forbidden host');
  const url = new URL(request.url ?? '/', 'http://ui.invalid');
  if (guard.token !== undefined && !hasToken(request, url, guard.token)) {
    return send(response, 403, 'text/plain; charset=utf-8', 'token required: open the URL servelab ui printed');
  }
  if (request.method !== 'GET') return send(response, 405, 'text/plain; charset=utf-8', 'servelab ui is read-only');
  if (guard.token !== undefined && url.searchParams.has('token')) {
    // The token moves into a cookie at once, so it leaves the address bar and is never sent to another site.
    response.writeHead(303, { location: '/', 'set-cookie': `servelab_token=${guard.token}; HttpOnly; SameSite=Strict; Path=/`, 'cache-control': 'no-store' });
    return void response.end();
  }
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
    // The panel's figures and the in-flight chart's last point are one stored progress row, read once.
    state.recordProgress();
    const history = live ? state.progressOf(runId) : [];
    return sendJson(response, {
      run: view.run,
      servers: runServers(db, runId),
      // The trial in flight of each lane (one without lanes): lanes measure at the same time.
      progress: latestPerLane(history).map((point) => point.progress),
      html: { ...view.html, live: live ? figuresHtml(liveFigures(view.run.startedAt, view.trials, history)) : '' },
    });
  }
  if ((match = url.pathname.match(/^\/api\/servers\/(\d+)\/log$/))) {
    const server = getServer(db, Number(match[1]));
    if (!server) return sendJson(response, { error: 'no such server' }, 404);
    const tail = { serverId: server.id, logPath: server.logPath, ...(await readLogTail(server.logPath)) };
    // What the server printed (its own args) is not redacted at write: its run's secret names hide it here.
    return sendJson(response, redactor().withPatterns(runRedactPatterns(db, server.runId)).deep(tail));
  }
  if (url.pathname === '/api/diff') {
    const [a, b] = [Number(url.searchParams.get('a')), Number(url.searchParams.get('b'))];
    // Drift is judged between runs of one experiment: across experiments the "change" would compare different work.
    const names = new Set([getRun(db, a)?.experimentName, getRun(db, b)?.experimentName]);
    if (names.size !== 1 || names.has(undefined)) return sendJson(response, { error: 'pick two runs of the same experiment' }, 404);
    const diff = state.diffView(a, b);
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

/**
 * Every JSON answer passes redaction: log tails and stores written before redaction existed may hold secrets. An
 * `html` key holds fragments the report modules rendered, whose escaping hid secrets before escaping: a text pass
 * over them would turn escaped markers into raw `<redacted:…>` tags the browser drops.
 */
function sendJson(response: ServerResponse, body: unknown, status = 200): void {
  const { html, ...rest } = body as { html?: unknown };
  const answer = html === undefined ? redactor().deep(body) : { ...redactor().deep(rest), html };
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(answer));
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

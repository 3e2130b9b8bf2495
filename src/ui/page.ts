/**
 * The `servelab ui` page: plain HTML + CSS + vanilla JS, no external resource. Text from the store and logs goes in
 * with textContent; tables and charts arrive as HTML/SVG rendered and escaped by the server (report modules).
 */

import { CAMPAIGN_CSS } from '../report/campaign-html.js';
import { EQUIVALENCE_CSS } from '../report/equivalence-html.js';
import { REPORT_CSS } from '../report/html.js';

const PAGE_CSS = `
body { display:grid; grid-template-columns:280px 1fr; min-height:100vh; }
nav { background:#fff; border-right:1px solid var(--border); padding:16px 0; overflow-y:auto; max-height:100vh; position:sticky; top:0; }
nav .brand { font-weight:700; font-size:16px; padding:0 18px 12px; border-bottom:1px solid var(--border); display:flex; align-items:center; gap:8px; }
nav .brand .dot { width:9px; height:9px; border-radius:50%; background:var(--muted); }
nav .brand .dot.live { background:var(--good); box-shadow:0 0 0 3px var(--good-bg); }
nav h3 { font-size:12px; text-transform:uppercase; letter-spacing:.04em; color:var(--muted); margin:16px 18px 6px; word-break:break-all; }
nav a { display:flex; justify-content:space-between; align-items:center; gap:8px; padding:6px 18px; color:var(--text); text-decoration:none; font-size:13px; }
nav a:hover { background:var(--soft); }
nav a.selected { background:#ddf4ff; box-shadow:inset 3px 0 0 var(--accent); }
main { padding:24px 32px 48px; min-width:0; }
header.top { display:flex; align-items:center; gap:12px; flex-wrap:wrap; }
section { margin-top:8px; }
.servers td .bar { height:6px; background:#eaeef2; border-radius:3px; margin-top:5px; overflow:hidden; width:160px; }
.servers td .bar div { height:100%; background:var(--accent); }
.servers tr { cursor:pointer; }
.servers tr.selected td { background:#f0f7ff; }
pre.log { background:#0d1117; color:#e6edf3; border-radius:8px; padding:12px 14px; margin:0; max-height:320px; overflow:auto; font-size:12px; line-height:1.45; white-space:pre-wrap; word-break:break-all; }
.progress { display:flex; align-items:center; gap:12px; }
.progress .bar { flex:1; height:8px; background:#eaeef2; border-radius:4px; overflow:hidden; }
.progress .bar div { height:100%; background:var(--good); }
.diff-pick { display:flex; gap:10px; align-items:center; margin-bottom:10px; }
select { font:inherit; padding:4px 8px; border:1px solid var(--border); border-radius:6px; background:#fff; }
.loading { display:flex; align-items:center; gap:10px; color:var(--muted); padding:24px 0; }
.loading .spinner { width:16px; height:16px; border:2px solid var(--border); border-top-color:var(--accent); border-radius:50%; animation:spin .8s linear infinite; }
@keyframes spin { to { transform:rotate(360deg); } }
.hidden { display:none; }
`;

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>servelab ui</title>
<style>${REPORT_CSS}${EQUIVALENCE_CSS}${CAMPAIGN_CSS}${PAGE_CSS}</style>
</head>
<body>
<nav>
  <div class="brand"><span class="dot" id="connection" title="live updates"></span>servelab</div>
  <div id="experiments"><p class="empty" style="padding:0 18px">Loading…</p></div>
</nav>
<main>
  <div id="loading" class="loading" role="status"><span class="spinner"></span><span id="loading-text">Loading…</span></div>
  <div id="empty" class="hidden"><h1>No runs yet</h1><p class="muted">Start one with <code>servelab run FILE</code>; it appears here as soon as it starts.</p></div>
  <div id="run" class="hidden">
    <header class="top"><h1 id="run-title"></h1><span id="run-status" class="pill"></span></header>
    <div id="facts"></div>
    <section id="live" class="hidden">
      <h2>Servers</h2>
      <table class="data servers"><thead><tr><th>server</th><th>host</th><th>status</th><th>phase</th><th class="num">elapsed</th><th>time to ready</th></tr></thead><tbody id="servers"></tbody></table>
      <h2 id="log-title">Server log</h2>
      <pre class="log" id="log"></pre>
      <div id="progress-block" class="hidden">
        <h2 id="progress-title">Trial in flight</h2>
        <div id="progress-rows"></div>
      </div>
      <h2>Live charts</h2>
      <div id="live-figures"></div>
    </section>
    <h2>Comparison</h2>
    <div id="verdicts"></div>
    <div id="search"></div>
    <div id="best"></div>
    <div id="quality"></div>
    <div id="spec"></div>
    <div id="lanes"></div>
    <div id="bisect"></div>
    <h2>Charts</h2>
    <div id="figures"></div>
    <div id="trials"></div>
    <div id="notes"></div>
    <h2>Fingerprint diff between runs</h2>
    <div class="diff-pick" id="diff-pick"><select id="diff-a"></select><span class="muted">→</span><select id="diff-b"></select></div>
    <div id="diff"></div>
    <h2>Environment</h2>
    <div id="environment"></div>
    <h2>Machine state</h2>
    <div id="machine"></div>
  </div>
</main>
<script src="/app.js"></script>
</body>
</html>
`;

export const APP_JS = String.raw`'use strict';
const state = { runId: null, shownRunId: null, serverId: null, serverPicked: false, servers: [], runs: [], runStatus: null, diffPicked: false };
const $ = (id) => document.getElementById(id);

function el(tag, props, children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (key === 'text') node.textContent = value;
    else if (key === 'className') node.className = value;
    else node.setAttribute(key, value);
  }
  for (const child of children || []) node.appendChild(child);
  return node;
}

function duration(ms) {
  if (ms === null || ms === undefined || !isFinite(ms) || ms < 0) return '—';
  const s = Math.round(ms / 1000);
  if (s < 60) return s + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return m + ' min ' + String(s % 60).padStart(2, '0') + ' s';
  return Math.floor(m / 60) + ' h ' + String(m % 60).padStart(2, '0') + ' min';
}

async function getJson(path) {
  const response = await fetch(path, { cache: 'no-store' });
  if (!response.ok) throw new Error(path + ': HTTP ' + response.status);
  return response.json();
}

function selectedFromHash() {
  const match = location.hash.match(/run=(\d+)/);
  return match ? Number(match[1]) : null;
}

/** One group per experiment name (a moved or copied file keeps its history), newest run first, newest group first. */
function groupByName(experiments) {
  const groups = new Map();
  for (const experiment of experiments) {
    const group = groups.get(experiment.name) || { name: experiment.name, filePaths: [], runs: [] };
    group.filePaths.push(experiment.filePath);
    group.runs.push(...experiment.runs);
    groups.set(experiment.name, group);
  }
  const newest = (group) => (group.runs.length > 0 ? group.runs[0].id : 0);
  const list = [...groups.values()];
  for (const group of list) group.runs.sort((a, b) => b.id - a.id);
  return list.sort((a, b) => newest(b) - newest(a));
}

/** The run to open without a #run= in the URL: the live one (newest if several), else the newest. */
function defaultRun(runs) {
  const live = runs.filter((run) => run.status === 'running');
  const pool = live.length > 0 ? live : runs;
  return pool.reduce((best, run) => (best === null || run.id > best.id ? run : best), null);
}

async function refreshExperiments() {
  const groups = groupByName(await getJson('/api/experiments'));
  state.runs = groups.flatMap((group) => group.runs.map((run) => ({ id: run.id, status: run.status, experiment: group.name, label: group.name + ' · run ' + run.id })));
  if (state.runId === null && state.runs.length > 0) {
    state.runId = defaultRun(state.runs).id;
    history.replaceState(null, '', '#run=' + state.runId);
  }
  const container = $('experiments');
  container.replaceChildren();
  for (const group of groups) {
    container.appendChild(el('h3', { text: group.name, title: group.filePaths.join('\n') }));
    for (const run of group.runs) {
      // Worded as the run's "Trials done" fact (trialsDone in report/html.ts): stored trials of those planned.
      const progress = run.plannedTrials ? run.trialCount + '/' + run.plannedTrials : String(run.trialCount);
      container.appendChild(el('a', { href: '#run=' + run.id, 'data-run': String(run.id), className: run.id === state.runId ? 'selected' : '' }, [
        el('span', { className: 'trials-done', text: 'run ' + run.id + ' · ' + progress + ' done' }),
        el('span', { className: 'pill ' + run.status, text: run.status }),
      ]));
    }
  }
  if (state.runs.length === 0) container.replaceChildren(el('p', { className: 'empty', style: 'padding:0 18px', text: 'No experiments yet.' }));
  $('empty').classList.toggle('hidden', state.runs.length > 0);
  if (state.runs.length === 0) $('loading').classList.add('hidden');
  fillDiffPickers();
}

/** Runs the diff may pick from: those of the shown run's experiment (drift across experiments means nothing). */
function diffCandidates() {
  const shown = state.runs.find((run) => run.id === state.runId);
  return shown ? state.runs.filter((run) => run.experiment === shown.experiment) : [];
}

/**
 * Default pair: the previous run of the same experiment → the run shown (or, without one, the next one after it).
 * Once the user picks a pair, it stays while the same experiment is shown.
 */
function defaultDiffPair(candidates) {
  const shown = candidates.find((run) => run.id === state.runId);
  if (!shown) return [undefined, undefined];
  const previous = candidates.filter((run) => run.id < shown.id).sort((a, b) => b.id - a.id)[0];
  if (previous) return [previous, shown];
  return [shown, candidates.filter((run) => run.id > shown.id).sort((a, b) => a.id - b.id)[0]];
}

function fillDiffPickers() {
  const candidates = diffCandidates();
  const defaults = defaultDiffPair(candidates);
  $('diff-pick').classList.toggle('hidden', candidates.length < 2);
  ['diff-a', 'diff-b'].forEach((id, index) => {
    const select = $(id);
    const previous = select.value;
    select.replaceChildren(...candidates.map((run) => el('option', { value: String(run.id), text: run.label })));
    const kept = state.diffPicked ? candidates.find((run) => String(run.id) === previous) : undefined;
    const preferred = kept || defaults[index];
    if (preferred) select.value = String(preferred.id);
  });
}

async function refreshRun() {
  if (state.runId === null) return;
  const runId = state.runId;
  if (state.shownRunId !== runId) {
    // Another run's tables would be wrong and a blank pane looks broken: say what is coming until it is there.
    $('run').classList.add('hidden');
    $('loading-text').textContent = 'Loading run ' + runId + '…';
    $('loading').classList.remove('hidden');
  }
  const data = await getJson('/api/runs/' + runId);
  if (state.runId !== runId) return;
  state.shownRunId = runId;
  $('loading').classList.add('hidden');
  $('run').classList.remove('hidden');
  $('run-title').textContent = data.run.experimentName + ' · run ' + data.run.id;
  $('run-status').textContent = data.run.status;
  $('run-status').className = 'pill ' + data.run.status;
  state.runStatus = data.run.status;
  // Fragments below are rendered and escaped by the server (same code as the HTML report).
  $('facts').innerHTML = data.html.facts;
  $('verdicts').innerHTML = data.html.verdicts;
  $('search').innerHTML = data.html.search;
  $('best').innerHTML = data.html.best;
  $('quality').innerHTML = data.html.quality;
  $('spec').innerHTML = data.html.spec;
  $('lanes').innerHTML = data.html.lanes;
  $('bisect').innerHTML = data.html.bisect;
  $('figures').innerHTML = data.html.figures;
  $('trials').innerHTML = data.html.trials;
  $('notes').innerHTML = data.html.notes;
  $('environment').innerHTML = data.html.environment;
  $('machine').innerHTML = data.html.machine;
  const live = data.run.status === 'running';
  $('live').classList.toggle('hidden', !live);
  $('live-figures').innerHTML = data.html.live;
  state.servers = data.servers;
  // The log pane follows the server in use (the newest starting or ready one) unless the user picked a server.
  if (!state.serverPicked || !state.servers.some((server) => server.id === state.serverId)) {
    const active = state.servers.filter((server) => server.status === 'starting' || server.status === 'ready');
    state.serverId = (active.at(-1) || state.servers.at(-1) || { id: null }).id;
    state.serverPicked = false;
  }
  renderServers();
  renderProgress(data.progress, live);
  if (live) await refreshLog();
}

function renderServers() {
  const body = $('servers');
  body.replaceChildren();
  const now = Date.now();
  for (const server of state.servers) {
    const elapsed = server.readyMs !== undefined ? server.readyMs : (server.status === 'starting' ? now - Date.parse(server.startedAt) : Date.parse(server.updatedAt) - Date.parse(server.startedAt));
    const ready = el('td');
    if (server.status === 'starting' && server.predictedReadyMs) {
      const left = server.predictedReadyMs - elapsed;
      ready.appendChild(el('div', { text: left > 0 ? '~' + duration(left) + ' left (predicted ' + duration(server.predictedReadyMs) + ')' : 'overdue (predicted ' + duration(server.predictedReadyMs) + ')' }));
      const bar = el('div', { className: 'bar' }, [el('div', { style: 'width:' + Math.min(100, (100 * elapsed) / server.predictedReadyMs).toFixed(1) + '%' })]);
      ready.appendChild(bar);
    } else if (server.status === 'starting') {
      ready.textContent = 'no earlier startup to predict from';
    } else if (server.readyMs !== undefined) {
      ready.textContent = 'ready after ' + duration(server.readyMs);
    } else {
      ready.textContent = server.message || '—';
    }
    const row = el('tr', { 'data-server': String(server.id), className: server.id === state.serverId ? 'selected' : '' }, [
      el('td', {}, [el('code', { text: server.label })]),
      el('td', { text: server.host }),
      el('td', {}, [el('span', { className: 'pill ' + server.status, text: server.status })]),
      el('td', { className: 'phase', text: server.phase }),
      el('td', { className: 'num elapsed', text: duration(elapsed) }),
      ready,
    ]);
    row.addEventListener('click', () => { state.serverId = server.id; state.serverPicked = true; renderServers(); refreshLog(); });
    body.appendChild(row);
  }
}

// One row per lane (one without lanes): lanes measure trials at the same time. Rows are updated in place.
function renderProgress(rows, live) {
  $('progress-block').classList.toggle('hidden', !live || rows.length === 0);
  $('progress-title').textContent = rows.length > 1 ? 'Trials in flight' : 'Trial in flight';
  const box = $('progress-rows');
  while (box.children.length > rows.length) box.lastChild.remove();
  rows.forEach((progress, index) => {
    let row = box.children[index];
    if (!row) {
      row = el('div', { className: 'progress' }, [el('span', { className: 'mono progress-label' }), el('div', { className: 'bar' }, [el('div')]), el('span', { className: 'mono progress-figures' })]);
      box.appendChild(row);
    }
    row.querySelector('.progress-label').textContent = (progress.lane ? progress.lane + ': ' : '') + progress.trialLabel;
    row.querySelector('.bar div').style.width = (progress.total > 0 ? (100 * progress.completed) / progress.total : 0).toFixed(1) + '%';
    // total 0: the runner is sending warm-up requests, whose counts are not the trial's.
    row.querySelector('.progress-figures').textContent = progress.total > 0 ? progress.completed + '/' + progress.total + ' requests · ' + progress.outputTokensPerSecond.toFixed(1) + ' tok/s' : 'warming up';
  });
}

async function refreshLog() {
  if (state.serverId === null) { $('log').textContent = ''; return; }
  const tail = await getJson('/api/servers/' + state.serverId + '/log');
  const log = $('log');
  const atBottom = log.scrollTop + log.clientHeight >= log.scrollHeight - 8;
  // textContent: server output is shown as text, never parsed as HTML.
  log.textContent = (tail.truncated ? '…\n' : '') + (tail.text || '(no output yet)');
  $('log-title').textContent = 'Server log · ' + tail.logPath;
  if (atBottom) log.scrollTop = log.scrollHeight;
}

async function refreshDiff() {
  const a = $('diff-a').value;
  const b = $('diff-b').value;
  if (diffCandidates().length < 2) {
    const shown = state.runs.find((run) => run.id === state.runId);
    $('diff').replaceChildren(el('p', { className: 'empty', text: 'No other run of ' + (shown ? shown.experiment : 'this experiment') + ' to compare with: runs are compared within one experiment.' }));
    return;
  }
  if (!a || !b || a === b) { $('diff').replaceChildren(el('p', { className: 'empty', text: 'Pick two different runs of this experiment to compare.' })); return; }
  const data = await getJson('/api/diff?a=' + a + '&b=' + b);
  $('diff').innerHTML = data.html;
}

// One refresh at a time; changes arriving meanwhile are folded into one more pass.
let refreshing = null;
let again = false;
function refreshAll() {
  if (refreshing) { again = true; return refreshing; }
  refreshing = (async () => {
    do {
      again = false;
      await refreshExperiments();
      await refreshRun();
      await refreshDiff();
    } while (again);
  })().finally(() => { refreshing = null; });
  return refreshing;
}

function connect() {
  const events = new EventSource('/events');
  events.addEventListener('open', () => $('connection').classList.add('live'));
  events.addEventListener('error', () => $('connection').classList.remove('live'));
  events.addEventListener('change', () => refreshAll().catch(report));
  events.addEventListener('log', (event) => {
    const { servers } = JSON.parse(event.data);
    if (servers.includes(state.serverId)) refreshLog().catch(report);
  });
}

function report(error) {
  console.warn('servelab ui:', error.message);
}

window.addEventListener('hashchange', () => {
  const previous = state.runs.find((run) => run.id === state.runId);
  state.runId = selectedFromHash();
  const next = state.runs.find((run) => run.id === state.runId);
  // A pair picked for one experiment means nothing for another.
  if (!previous || !next || previous.experiment !== next.experiment) state.diffPicked = false;
  state.serverId = null;
  state.serverPicked = false;
  refreshAll().catch(report);
});
for (const id of ['diff-a', 'diff-b']) {
  $(id).addEventListener('change', () => {
    state.diffPicked = true;
    refreshDiff().catch(report);
  });
}
// Elapsed times and countdowns tick between store updates.
setInterval(() => { if (state.runStatus === 'running') renderServers(); }, 1000);
state.runId = selectedFromHash();
connect();
// The first page needs no store change to be drawn: fetch it now, not when the event stream opens.
refreshAll().catch(report);
`;

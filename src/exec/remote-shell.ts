/**
 * Pure builders of the POSIX shell text servelab sends to a remote host, and parsers of what comes back.
 * Kept free of I/O so the exact scripts are unit-tested; the SSH transport only ships them over `sh -s`.
 */

import { type PortRange, parseEphemeralRange } from '../launch/port-range.js';

/** Quote one word for a POSIX shell: safe words stay readable, everything else goes in single quotes. */
export function shellQuote(word: string): string {
  if (word !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

export function shellJoin(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}

/** A remote path as a shell word: a leading `~/` must expand to $HOME, which quoting would prevent. */
export function remotePathWord(path: string): string {
  if (path === '~') return '"$HOME"';
  if (path.startsWith('~/')) return `"$HOME"/${shellQuote(path.slice(2))}`;
  return shellQuote(path);
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export interface DetachedJob {
  /** Job directory on the host (may start with ~/); holds run.sh, out.log, pid, exit, heartbeat. */
  dir: string;
  command: string[];
  env: Record<string, string>;
  unsetEnv?: string[];
  cwd?: string;
  /** The watchdog stops the job when nobody has polled it for this long (servelab killed, network gone for good). */
  heartbeatTimeoutMinutes: number;
}

/**
 * Script that starts `command` detached from the SSH session: its own session and process group (setsid), output to
 * out.log, a supervisor that records the exit status and a watchdog that stops the group when polling stops. It
 * prints `started PGID PID`. `env -u … K=V … cmd` makes the exec'd process's environment exactly the recorded one.
 */
export function startDetachedScript(job: DetachedJob): string {
  for (const name of [...Object.keys(job.env), ...(job.unsetEnv ?? [])]) {
    if (!ENV_NAME.test(name)) throw new Error(`invalid environment variable name: ${JSON.stringify(name)}`);
  }
  if (job.command.length === 0) throw new Error('empty command');
  const envArgv = ['env', ...(job.unsetEnv ?? []).flatMap((name) => ['-u', name]), ...Object.entries(job.env).map(([name, value]) => `${name}=${value}`)];
  // `--` stops env from reading a command that starts with "-" or contains "=" as one of its own arguments.
  const run = ['#!/bin/sh', job.cwd ? `cd ${remotePathWord(job.cwd)} || exit 127` : '', `exec ${shellJoin(envArgv)} ${shellJoin(job.command)} </dev/null`]
    .filter(Boolean)
    .join('\n');
  const staleMinutes = Math.max(1, Math.round(job.heartbeatTimeoutMinutes));
  // dash's kill takes no "--": `kill -TERM -PGID` is the portable spelling for a process group.
  const supervise = [
    '#!/bin/sh',
    // Runs as the leader of a new session, so $$ is the process group of everything the job starts.
    'cd "$1" || exit 1',
    'echo $$ > pgid',
    'sh ./run.sh > out.log 2>&1 &',
    'child=$!',
    'echo $child > pid',
    '(',
    '  while sleep 5; do',
    `    if [ -n "$(find heartbeat -mmin +${staleMinutes} 2>/dev/null)" ]; then`,
    `      echo "servelab: nobody has polled this job for ${staleMinutes} minutes; stopping it" >> out.log`,
    '      kill -TERM -$$',
    '    fi',
    '  done',
    ') &',
    'watchdog=$!',
    // A stop (TERM to the group) ends this shell too: then no exit file is written and the poll reports "gone".
    'wait $child',
    'echo $? > exit.tmp && mv exit.tmp exit',
    'kill $watchdog 2>/dev/null',
  ].join('\n');
  const dir = remotePathWord(job.dir);
  return [
    'set -e',
    `dir=${dir}`,
    'mkdir -p "$dir"',
    'cd "$dir"',
    // Idempotent: a start retried after a dropped connection reports the job the first attempt started.
    'if [ -s pid ] && [ -s pgid ]; then echo "started $(cat pgid) $(cat pid)"; exit 0; fi',
    'touch heartbeat out.log',
    // One single-quoted word each, no heredoc: no line of a command or env value can end the text early.
    `printf '%s\\n' ${shellQuote(run)} > run.sh`,
    `printf '%s\\n' ${shellQuote(supervise)} > supervise.sh`,
    'command -v setsid >/dev/null || { echo "servelab: setsid not found on this host (util-linux)" >&2; exit 3; }',
    'setsid sh ./supervise.sh "$PWD" </dev/null >/dev/null 2>&1 &',
    // Wait for the supervisor to write its pids, so the caller can always stop what it started.
    'i=0; while [ ! -s pid ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done',
    '[ -s pid ] || { echo "servelab: the job did not start" >&2; exit 4; }',
    'echo "started $(cat pgid) $(cat pid)"',
  ].join('\n');
}

export function parseStarted(stdout: string): { pgid: number; pid: number } | undefined {
  const match = /^started (\d+) (\d+)$/m.exec(stdout);
  return match ? { pgid: Number(match[1]), pid: Number(match[2]) } : undefined;
}

/**
 * Script for one poll: touch the heartbeat, report the job's state and byte size of its log, then the log bytes
 * from `offset` (at most `maxBytes`). Output: `state alive|exited CODE|gone`, `size N`, a line `--`, raw log bytes.
 */
export function pollScript(dir: string, offset: number, maxBytes: number): string {
  return [
    `cd ${remotePathWord(dir)} || { echo "state missing"; exit 0; }`,
    'touch heartbeat',
    'if [ -s exit ]; then echo "state exited $(cat exit)";',
    'elif kill -0 "$(cat pid 2>/dev/null)" 2>/dev/null; then echo "state alive";',
    'else echo "state gone"; fi',
    'size=$(wc -c < out.log | tr -d " ")',
    'echo "size $size"',
    'echo "--"',
    `[ "$size" -gt ${offset} ] && tail -c +${offset + 1} out.log | head -c ${maxBytes}`,
    'exit 0',
  ].join('\n');
}

export type JobState = { kind: 'alive' } | { kind: 'exited'; code: number } | { kind: 'gone' } | { kind: 'missing' };

export interface PollReply {
  state: JobState;
  logSize: number;
  logBytes: Buffer;
}

/** Parse pollScript's output; undefined when it is not a complete reply (connection cut mid-way). */
export function parsePollReply(output: Buffer): PollReply | undefined {
  const separator = output.indexOf('\n--\n');
  const header = (separator === -1 ? output : output.subarray(0, separator)).toString('utf8');
  const stateMatch = /^state (alive|exited (\d+)|gone|missing)$/m.exec(header);
  if (!stateMatch) return undefined;
  const state: JobState =
    stateMatch[1] === 'alive'
      ? { kind: 'alive' }
      : stateMatch[1] === 'gone'
        ? { kind: 'gone' }
        : stateMatch[1] === 'missing'
          ? { kind: 'missing' }
          : { kind: 'exited', code: Number(stateMatch[2]) };
  if (state.kind === 'missing') return { state, logSize: 0, logBytes: Buffer.alloc(0) };
  const sizeMatch = /^size (\d+)$/m.exec(header);
  if (!sizeMatch || separator === -1) return undefined;
  return { state, logSize: Number(sizeMatch[1]), logBytes: output.subarray(separator + 4) };
}

/**
 * Script that stops a detached job: TERM to its process group, KILL after `graceSeconds`, and waits until every
 * process of the group is gone. Prints `stopped` (or `stopped-kill` when KILL was needed).
 */
export function stopScript(dir: string, graceSeconds: number): string {
  const ticks = Math.max(1, Math.round(graceSeconds * 10));
  return [
    `cd ${remotePathWord(dir)} 2>/dev/null || { echo stopped; exit 0; }`,
    'pgid=$(cat pgid 2>/dev/null)',
    '[ -n "$pgid" ] || { echo stopped; exit 0; }',
    'kill -TERM -$pgid 2>/dev/null || { echo stopped; exit 0; }',
    `i=0; while kill -0 -$pgid 2>/dev/null && [ $i -lt ${ticks} ]; do sleep 0.1; i=$((i+1)); done`,
    'kill -0 -$pgid 2>/dev/null || { echo stopped; exit 0; }',
    'kill -KILL -$pgid 2>/dev/null',
    'i=0; while kill -0 -$pgid 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done',
    'kill -0 -$pgid 2>/dev/null && { echo "still-running"; exit 0; }',
    'echo stopped-kill',
  ].join('\n');
}

/** Script that deletes a finished job's directory; only one that looks like ours (has supervise.sh). */
export function removeJobScript(dir: string): string {
  const word = remotePathWord(dir);
  return `[ -f ${word}/supervise.sh ] && rm -rf ${word}; exit 0`;
}

/**
 * Script that prints the job directories under `remoteDir` whose names carry `tag` (one absolute path a line): the
 * jobs an executor of the same part of a run started, for a later runner of it to stop (see SshExecutor).
 */
export function taggedJobsScript(remoteDir: string, tag: string): string {
  if (!/^[A-Za-z0-9]+$/.test(tag)) throw new Error(`invalid job tag: ${JSON.stringify(tag)}`);
  return [
    `cd ${remotePathWord(remoteDir)} 2>/dev/null || exit 0`,
    // Each job dir with its server's pid (empty when it never got one), tab-separated: the runner marks that row.
    `for d in *-${tag}-*; do [ -f "$d/supervise.sh" ] && printf '%s/%s\\t%s\\n' "$PWD" "$d" "$(cat "$d/pid" 2>/dev/null)"; done`,
    'exit 0',
  ].join('\n');
}

/** Script that prints the NUL-separated environment of a running process (Linux /proc); empty when unreadable. */
export function environScript(pid: number): string {
  return `cat /proc/${pid}/environ 2>/dev/null; exit 0`;
}

export function parseEnviron(raw: Buffer): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of raw.toString('utf8').split('\0')) {
    const equals = entry.indexOf('=');
    if (equals > 0) env[entry.slice(0, equals)] = entry.slice(equals + 1);
  }
  return env;
}

/**
 * Script that says who listens on `port` (Linux /proc): "ours" when a process of group `pgid` holds the listening
 * socket, "other PID CMDLINE" when only other processes do, "unknown" when /proc cannot tell (no listener found,
 * or its owner unreadable).
 */
export function listenerOwnerScript(port: number, pgid: number): string {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  return [
    `inodes=$(awk '$4 == "0A" && substr($2, length($2) - 4) == ":${hex}" { print $10 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)`,
    'other=',
    'for inode in $inodes; do',
    '  for fd in $(find /proc/[0-9]*/fd -lname "socket:\\[$inode\\]" 2>/dev/null); do',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a JS template
    '    pid=${fd#/proc/}; pid=${pid%%/*}',
    "    pgrp=$(sed 's/.*) //' /proc/$pid/stat 2>/dev/null | cut -d' ' -f3)",
    `    if [ "$pgrp" = ${pgid} ]; then echo ours; exit 0; fi`,
    '    [ -n "$other" ] || other="$pid $(tr \'\\0\' \' \' < /proc/$pid/cmdline 2>/dev/null | cut -c1-200)"',
    '  done',
    'done',
    'if [ -n "$other" ]; then echo "other $other"; else echo unknown; fi',
    'exit 0',
  ].join('\n');
}

/** The reply of listenerOwnerScript: the other process, or undefined when the listener is ours or unknown. */
export function parseListenerOwner(stdout: string): { pid: number; cmdline?: string } | undefined {
  const match = /^other (\d+) ?(.*)$/m.exec(stdout);
  if (!match) return undefined;
  const cmdline = match[2]!.trim();
  return { pid: Number(match[1]), ...(cmdline && { cmdline }) };
}

/** Script listing the host's TCP sockets (Linux /proc/net) and its ephemeral port range, for picking a free port there. */
export const PORTS_SCRIPT = 'cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; cat /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null; exit 0';

/** What PORTS_SCRIPT printed: ports listened on (st 0A), ports any socket holds, and the ephemeral range. */
export interface HostPorts {
  listening: Set<number>;
  inUse: Set<number>;
  ephemeral?: PortRange;
}

export function parseHostPorts(text: string): HostPorts {
  const ports: HostPorts = { listening: new Set(), inUse: new Set() };
  for (const line of text.split('\n')) {
    const ephemeral = parseEphemeralRange(line);
    if (ephemeral) {
      ports.ephemeral = ephemeral;
      continue;
    }
    const fields = line.trim().split(/\s+/);
    if (fields.length < 4 || !/^[0-9A-F]{2}$/.test(fields[3] ?? '')) continue;
    const port = Number.parseInt(fields[1]?.split(':').pop() ?? '', 16);
    if (!Number.isFinite(port)) continue;
    // A connected or closing socket blocks a bind as much as a listener does.
    ports.inUse.add(port);
    if (fields[3] === '0A') ports.listening.add(port);
  }
  return ports;
}

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { freePort } from '../launch/port.js';
import { signalChild } from '../util/child-signal.js';
import { UserError } from '../util/errors.js';

/** What identifies an SSH destination: everything else comes from ~/.ssh/config, the agent, ProxyJump... */
export interface SshTarget {
  host: string;
  port?: number;
  identityFile?: string;
  sshOptions?: string[];
}

export interface SshExecResult {
  /** null when the command was killed by our timeout or abort. */
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/** ssh exits with 255 for its own failures (connection refused, dropped, auth); remote commands never do here. */
export const SSH_CONNECTION_FAILURE = 255;

const CONNECT_TIMEOUT_S = 15;
// Probe the peer every 5 s and give up after 3 misses: a dead link is noticed within ~15 s, not TCP's minutes.
const KEEPALIVE = ['-o', 'ServerAliveInterval=5', '-o', 'ServerAliveCountMax=3'];

/** Options every ssh invocation shares; pure so the exact command line is testable. */
export function sshArgs(target: SshTarget, controlPath: string): string[] {
  return [
    '-o',
    `ControlPath=${controlPath}`,
    // Never prompt: servelab runs unattended, a password prompt would hang it. Keys, agents and certificates work.
    '-o',
    'BatchMode=yes',
    '-o',
    `ConnectTimeout=${CONNECT_TIMEOUT_S}`,
    ...KEEPALIVE,
    ...(target.port !== undefined ? ['-p', String(target.port)] : []),
    ...(target.identityFile ? ['-i', target.identityFile] : []),
    ...(target.sshOptions ?? []).flatMap((option) => ['-o', option]),
  ];
}

export interface RemoteEndpoint {
  host: string;
  port: number;
}

function forwardSpec(localPort: number, remote: RemoteEndpoint): string {
  const host = remote.host.includes(':') ? `[${remote.host}]` : remote.host;
  return `127.0.0.1:${localPort}:${host}:${remote.port}`;
}

/** Backoff between reconnect attempts: 0.5 s doubling to 10 s. */
export function reconnectDelayMs(attempt: number): number {
  return Math.min(10_000, 500 * 2 ** Math.max(0, attempt));
}

/**
 * One multiplexed SSH connection to a host, driven through the system `ssh` client. A master process (ours, not a
 * ControlPersist daemon, so its death is noticed at once) carries every command and port forward. When it dies —
 * network blip, sshd restart, someone killed it — it is restarted with backoff and its forwards re-added, on the
 * same local ports so URLs handed out stay valid. Commands meanwhile fall back to direct connections and, when
 * asked to, retry on connection failures until `reconnectWindowMs` has passed without success.
 */
export class SshTransport {
  readonly target: SshTarget;
  private readonly controlDir: string;
  private readonly controlPath: string;
  private readonly log: (line: string) => void;
  private readonly reconnectWindowMs: number;
  private master: ChildProcess | undefined;
  private masterStderr = '';
  private connecting: Promise<void> | undefined;
  private everConnected = false;
  private closed = false;
  /** local port → where it leads on the host */
  private readonly forwards = new Map<number, RemoteEndpoint>();
  private readonly active = new Set<ChildProcess>();

  constructor(target: SshTarget, options: { log?: (line: string) => void; reconnectWindowMs?: number } = {}) {
    this.target = target;
    // Private, short path: unix socket paths are limited to ~104 bytes, and nobody else may use our master.
    this.controlDir = mkdtempSync(join(tmpdir(), 'servelab-ssh-'));
    this.controlPath = join(this.controlDir, 'cm');
    this.log = options.log ?? (() => {});
    this.reconnectWindowMs = options.reconnectWindowMs ?? 10 * 60_000;
  }

  get label(): string {
    return this.target.host;
  }

  /**
   * Have a master connection. The first failure (bad host, refused key) is the user's to fix, so it throws at
   * once; after a drop, wait for the reconnect (with backoff, up to the reconnect window) instead.
   */
  async connect(): Promise<void> {
    if (this.master) return;
    if (!this.everConnected) return this.startOnce();
    const started = Date.now();
    for (let attempt = 0; !this.master; attempt++) {
      try {
        await this.startOnce();
      } catch (error) {
        if (this.closed || Date.now() - started > this.reconnectWindowMs) throw error;
        await delay(reconnectDelayMs(attempt));
      }
    }
  }

  /** One attempt, shared by concurrent callers. */
  private startOnce(): Promise<void> {
    this.connecting ??= this.startMaster().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async startMaster(): Promise<void> {
    if (this.closed) throw new Error('ssh transport is closed');
    // A socket left by a killed master would make the new one run without multiplexing.
    rmSync(this.controlPath, { force: true });
    const args = [
      ...sshArgs(this.target, this.controlPath),
      '-M',
      '-N',
      '-o',
      'ControlMaster=yes',
      '-o',
      'ControlPersist=no',
      '-o',
      'ExitOnForwardFailure=no',
      this.target.host,
    ];
    const master = spawn('ssh', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.masterStderr = '';
    master.stderr!.setEncoding('utf8');
    master.stderr!.on('data', (chunk: string) => {
      // Keep only the end: a forward to a port nobody listens on yet logs a line per refused probe.
      this.masterStderr = (this.masterStderr + chunk).slice(-4000);
    });
    // 'close', not 'exit': only then has its stderr (the reason it failed) been read to the end.
    const exited = new Promise<number | null>((resolve) => {
      master.once('close', (code) => resolve(code));
      master.once('error', () => resolve(null));
    });
    const deadline = Date.now() + (CONNECT_TIMEOUT_S + 10) * 1000;
    for (;;) {
      const early = await Promise.race([exited, delay(100).then(() => 'pending' as const)]);
      if (early !== 'pending') {
        const reason =
          this.masterStderr
            .trim()
            .split('\n')
            .filter((line) => line !== '' && !line.startsWith('channel '))
            .pop() ?? `ssh exited with code ${early}`;
        throw new UserError(
          `cannot connect to ${this.target.host} over ssh: ${reason}`,
          `check that \`ssh ${this.target.host} true\` works without a password prompt (key or agent), and the host/port in executor:`,
        );
      }
      if (await this.checkMaster()) break;
      if (Date.now() > deadline) {
        signalChild(master, 'SIGTERM');
        throw new UserError(`ssh to ${this.target.host} did not finish connecting within ${CONNECT_TIMEOUT_S + 10} s`, 'check the host and network');
      }
    }
    this.master = master;
    this.everConnected = true;
    void exited.then(() => this.onMasterExit(master));
    for (const [localPort, remote] of this.forwards) {
      const result = await this.control(['-O', 'forward', '-L', forwardSpec(localPort, remote)]);
      if (result.code !== 0)
        this.log(`ssh: cannot restore forward 127.0.0.1:${localPort} to ${remote.host}:${remote.port} on ${this.target.host}: ${result.stderr.trim()}`);
    }
  }

  /** A control command (`-O check|forward|cancel|exit`) to our master. */
  private control(args: string[]): Promise<{ code: number | null; stderr: string }> {
    return new Promise((resolve) => {
      const child = spawn('ssh', [...sshArgs(this.target, this.controlPath), ...args, this.target.host], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (chunk: string) => (stderr += chunk));
      const timer = setTimeout(() => signalChild(child, 'SIGTERM'), 10_000);
      child.once('error', (error) => resolve({ code: null, stderr: String(error) }));
      child.once('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
    });
  }

  private async checkMaster(): Promise<boolean> {
    return (await this.control(['-O', 'check'])).code === 0;
  }

  private onMasterExit(master: ChildProcess): void {
    if (this.master !== master) return;
    this.master = undefined;
    if (this.closed) return;
    this.log(`ssh connection to ${this.target.host} lost; reconnecting`);
    void this.reconnectLoop();
  }

  private async reconnectLoop(): Promise<void> {
    const started = Date.now();
    for (let attempt = 0; !this.closed && !this.master; attempt++) {
      try {
        await this.startOnce();
        this.log(`ssh connection to ${this.target.host} re-established after ${((Date.now() - started) / 1000).toFixed(1)} s`);
        return;
      } catch (error) {
        if (Date.now() - started > this.reconnectWindowMs) {
          this.log(`ssh: still cannot reach ${this.target.host}: ${(error as Error).message}`);
          return;
        }
        await delay(reconnectDelayMs(attempt));
      }
    }
  }

  /** Forward a local port (chosen here, on 127.0.0.1) to host:port as seen from the host; kept across reconnects. */
  async forward(remote: RemoteEndpoint): Promise<number> {
    await this.connect();
    const localPort = await freePort('127.0.0.1');
    this.forwards.set(localPort, remote);
    const result = await this.control(['-O', 'forward', '-L', forwardSpec(localPort, remote)]);
    // A master that died just now re-adds every registered forward when it is back: only a live master's refusal counts.
    if (result.code !== 0 && (await this.checkMaster())) {
      this.forwards.delete(localPort);
      throw new UserError(
        `cannot forward a local port to ${remote.host}:${remote.port} on ${this.target.host}: ${result.stderr.trim()}`,
        'check that the host allows TCP forwarding (AllowTcpForwarding in its sshd_config)',
      );
    }
    return localPort;
  }

  async unforward(localPort: number): Promise<void> {
    const remote = this.forwards.get(localPort);
    if (remote === undefined) return;
    this.forwards.delete(localPort);
    if (this.master) await this.control(['-O', 'cancel', '-L', forwardSpec(localPort, remote)]);
  }

  /** Run a POSIX shell script on the host (`sh -s`, script on stdin, so the login shell's quoting rules never matter). */
  async exec(script: string, options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<SshExecResult> {
    if (this.closed) throw new Error('ssh transport is closed');
    const args = [...sshArgs(this.target, this.controlPath), '-o', 'ControlMaster=no', this.target.host, 'sh -s'];
    return new Promise((resolve) => {
      const child = spawn('ssh', args, { stdio: ['pipe', 'pipe', 'pipe'] });
      this.active.add(child);
      const stdout: Buffer[] = [];
      let stderr = '';
      let killed = false;
      const kill = () => {
        killed = true;
        signalChild(child, 'SIGTERM');
      };
      const timer = options.timeoutMs ? setTimeout(kill, options.timeoutMs) : undefined;
      options.signal?.addEventListener('abort', kill, { once: true });
      child.stdout!.on('data', (chunk: Buffer) => stdout.push(chunk));
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-16_000)));
      child.stdin!.on('error', () => {}); // the connection may die before the script is written; the exit code says so
      child.stdin!.end(script.endsWith('\n') ? script : `${script}\n`);
      const finish = (code: number | null) => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', kill);
        this.active.delete(child);
        resolve({ code: killed ? null : code, stdout: Buffer.concat(stdout), stderr });
      };
      child.once('error', (error) => {
        stderr += String(error);
        finish(SSH_CONNECTION_FAILURE);
      });
      child.once('close', (code) => finish(code));
    });
  }

  /**
   * exec, retried while ssh reports a connection failure, for idempotent scripts. Gives up (UserError) when the
   * host stays unreachable for the reconnect window; waits out the master's own reconnect attempts meanwhile.
   */
  async execRetrying(script: string, options: { timeoutMs?: number; signal?: AbortSignal; what: string }): Promise<SshExecResult> {
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      const result = await this.exec(script, options);
      if (result.code !== SSH_CONNECTION_FAILURE) return result;
      if (options.signal?.aborted) return { ...result, code: null };
      if (Date.now() - started > this.reconnectWindowMs) {
        throw new UserError(
          `lost the ssh connection to ${this.target.host} while ${options.what} and could not reconnect for ${Math.round(this.reconnectWindowMs / 1000)} s: ${result.stderr.trim().split('\n').pop() ?? ''}`,
          'check the network and the host; the remote job directory keeps its log',
        );
      }
      if (attempt === 0) this.log(`ssh to ${this.target.host} failed while ${options.what}; retrying`);
      await delay(reconnectDelayMs(attempt));
    }
  }

  /** Same as exec but blocking, for process-exit cleanup when the event loop is gone. */
  execSync(script: string, timeoutMs: number): number | null {
    const args = [...sshArgs(this.target, this.controlPath), '-o', 'ControlMaster=no', this.target.host, 'sh -s'];
    return spawnSync('ssh', args, { input: script, stdio: ['pipe', 'ignore', 'ignore'], timeout: timeoutMs }).status;
  }

  /** Pid of the master ssh process (tests kill it to simulate a dropped connection). */
  get masterPid(): number | undefined {
    return this.master?.pid;
  }

  /** Wait until the master is up again after a drop (bounded). */
  async waitConnected(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.master && (await this.checkMaster())) return true;
      await delay(100);
    }
    return false;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const child of this.active) signalChild(child, 'SIGTERM');
    if (this.master) {
      spawnSync('ssh', [...sshArgs(this.target, this.controlPath), '-O', 'exit', this.target.host], { stdio: 'ignore', timeout: 5000 });
      signalChild(this.master, 'SIGTERM');
      this.master = undefined;
    }
    rmSync(this.controlDir, { recursive: true, force: true });
  }
}

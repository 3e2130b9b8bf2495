import type { ServerProfile } from '../profiles/types.js';
import type { ExitInfo, PhaseTiming, ReadyProgress, ReadyResult } from '../ready/types.js';
import type { SettingNames } from '../ready/wait.js';
import type { PortRange } from './port-range.js';

// Defined by the readiness layer, which watches for the exit; re-exported for the launchers.
export type { ExitInfo } from '../ready/types.js';

/** A server to start: argv plus the environment it must run with. `{port}` in argv is replaced by the chosen port. */
export interface ServerSpec {
  command: string[];
  /** Variables set for the server on top of the inherited environment. */
  env: Record<string, string>;
  /** Variables removed from the inherited environment (a variant can *unset* a tuning variable). */
  unsetEnv?: string[];
  cwd?: string;
  profile: ServerProfile;
  host?: string;
  /** Fixed port; when absent a free one is picked and substituted for `{port}`. */
  port?: number;
  /** Where that free one is picked (inclusive); default: below the kernel's ephemeral range (see port-range.ts). */
  portRange?: PortRange;
  /** Where the server's stdout+stderr are teed. */
  logPath: string;
  /** Readiness gate. */
  readyTimeoutMs: number;
  verifyServing?: boolean;
  /** Model name for the generation check; default: first model listed by /v1/models. */
  model?: string;
}

/** A server that passed its readiness gate. */
export interface RunningServer {
  baseUrl: string;
  pid: number;
  logPath: string;
  /** The argv and full environment the process was actually started with. */
  command: string[];
  env: Record<string, string>;
  /**
   * The same with placeholder-filled values written as their templates (`--port {port}`, `VLLM_PORT: "{port}"`):
   * what a fingerprint records, since the port picked at launch is no property of the configuration.
   */
  template: { command: string[]; env: Record<string, string> };
  ready: ReadyResult;
  /** Resolves when the process exits (for any reason). */
  exited: Promise<ExitInfo>;
  /** Last lines of the server log. */
  logTail(lines: number): Promise<string[]>;
  /** SIGTERM the process group, SIGKILL after a grace period; resolves when every process of the group is gone. */
  stop(): Promise<void>;
}

export interface LaunchHooks {
  onProgress?: (progress: ReadyProgress) => void;
  signal?: AbortSignal;
  /** Time to ready of the last startup of the same config (see ready/history.ts), passed through to progress. */
  previousReadyMs?: number;
  /** Phase timings of that startup, for a phase-anchored time-to-ready estimate. */
  previousPhases?: PhaseTiming[];
  /**
   * Called with the process id as soon as the server is spawned, long before it is ready: a runner that records it
   * can stop a server still loading its model after the runner itself was killed. On a remote executor it is the
   * pid on that host (the next runner's executor stops it there; its identity cannot be read here).
   */
  onSpawn?: (pid: number) => void;
  /** A line for the user about the launch itself (a relaunch on another port). */
  onNote?: (line: string) => void;
  /** How the caller's settings are named in readiness hints (default: the CLI flags; experiment files: SERVER_FILE_SETTINGS). */
  settingNames?: SettingNames;
}

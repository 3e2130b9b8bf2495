import { spawn } from 'node:child_process';
import { launchServer } from '../launch/launch.js';
import { SERVER_FILE_SETTINGS } from '../launch/server-schema.js';
import type { LaunchHooks, RunningServer, ServerSpec } from '../launch/types.js';
import { runBenchmark } from '../load/run.js';
import type { BenchOptions, BenchResult } from '../load/types.js';
import { signalChild } from '../util/child-signal.js';
import { missingProgram } from '../util/program-path.js';
import type { CommandResult, Executor } from './types.js';

const DEFAULT_COMMAND_TIMEOUT_MS = 10_000;
/** Enough output for any fingerprint probe; a runaway command cannot exhaust memory. */
const MAX_OUTPUT_CHARS = 1_000_000;

/** Runs servers, load and probe commands on this machine (also what a Slurm job uses on its node). */
export class LocalExecutor implements Executor {
  readonly kind = 'local' as const;
  readonly hostLabel: string;
  private readonly servers = new Set<RunningServer>();

  constructor(hostLabel = 'local') {
    this.hostLabel = hostLabel;
  }

  async launch(spec: ServerSpec, hooks: LaunchHooks): Promise<RunningServer> {
    // Executors serve experiment files: readiness hints name the file's keys unless the caller says otherwise.
    const server = await launchServer(spec, { settingNames: SERVER_FILE_SETTINGS, ...hooks });
    this.servers.add(server);
    void server.exited.then(() => this.servers.delete(server));
    return server;
  }

  bench(options: BenchOptions): Promise<BenchResult> {
    return runBenchmark(options);
  }

  run(argv: string[], timeoutMs = DEFAULT_COMMAND_TIMEOUT_MS): Promise<CommandResult> {
    return new Promise((resolve) => {
      const [command, ...args] = argv;
      if (command === undefined) {
        resolve({ code: null, stdout: '', stderr: 'empty command' });
        return;
      }
      // As spawn would answer, without forking this process for a program that is not there.
      if (missingProgram(command)) {
        resolve({ code: null, stdout: '', stderr: `spawn ${command} ENOENT` });
        return;
      }
      // Our own timer rather than spawn's `timeout` option: Node leaves that timer running when the program is
      // missing (no 'exit' event), which would hold the process open for the whole timeout.
      const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      const timer = setTimeout(() => signalChild(child, 'SIGKILL'), timeoutMs);
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        if (stdout.length < MAX_OUTPUT_CHARS) stdout += chunk;
      });
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        if (stderr.length < MAX_OUTPUT_CHARS) stderr += chunk;
      });
      const finish = (result: CommandResult): void => {
        clearTimeout(timer);
        resolve(result);
      };
      // A missing program is an answer ("not installed"), not a failure of the caller.
      child.on('error', (error) => finish({ code: null, stdout, stderr: stderr + error.message }));
      child.on('close', (code) => finish({ code, stdout, stderr }));
    });
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers].map((server) => server.stop()));
    this.servers.clear();
  }
}

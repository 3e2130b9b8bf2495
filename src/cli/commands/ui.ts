import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { defaultStorePath } from '../../store/db.js';
import { isLoopbackHost, startUi } from '../../ui/server.js';
import { messageOf, UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';

interface UiFlags {
  port: string;
  host: string;
  store?: string;
  token?: boolean;
}

export function registerUi(program: Command): void {
  program
    .command('ui')
    .description('live dashboard over the result store: running servers, log tails, charts, verdicts, fingerprint diffs (read-only)')
    .option('--port <n>', 'port to listen on (0 = any free port)', '8377')
    .option('--host <host>', 'address to bind (loopback unless you mean to share it)', '127.0.0.1')
    .option('--store <path>', 'result store (default: $SERVELAB_STORE or ~/.servelab/servelab.db)')
    .option('--token', 'require a random access token (printed in the URL); always on for a non-loopback --host')
    .action(async (flags: UiFlags) => {
      const port = Number(flags.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        throw new UserError(`--port must be an integer 0-65535, got "${flags.port}"`, 'pass e.g. --port 8377', ExitCode.usage);
      }
      const shared = !isLoopbackHost(flags.host);
      if (shared) {
        process.stderr.write(
          `servelab ui: WARNING: listening on ${flags.host}: anyone who can reach this machine and has the token in the URL below can read your results and server logs\n`,
        );
      }
      const token = shared || flags.token ? randomBytes(24).toString('base64url') : undefined;
      const ui = await startUi({ storePath: defaultStorePath(flags.store), host: flags.host, port, ...(token !== undefined && { token }) }).catch(
        (error: unknown) => {
          if (error instanceof UserError) throw error;
          throw new UserError(`cannot listen on ${flags.host}:${port}: ${messageOf(error)}`, 'pick another --port (or --port 0 for any free one)');
        },
      );
      // The URL goes to stdout so scripts (and tests) can read it.
      process.stdout.write(`servelab ui: ${ui.url}\n`);
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          void ui.close().then(resolve);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
    });
}

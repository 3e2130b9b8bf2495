import { basename } from 'node:path';
import type { DeclaredCosts } from '../experiment/plan/trial-estimate.js';
import type { ServerConfig } from '../experiment/spec/types.js';
import { fillPlaceholders } from '../launch/placeholders.js';
import { expectedE2eMs } from '../simulate/model.js';
import { simConfigOfArgv } from './commands/simulate.js';

/**
 * A plan's figures for a server that is servelab's own simulator (`node …/servelab.js simulate …`): the load time
 * and decode model its flags declare, with the server's environment (an `--env-speedup` depends on it). Other
 * servers declare nothing: undefined.
 */
export function simulatorDeclaredCosts(server: ServerConfig): DeclaredCosts | undefined {
  const at = server.command.findIndex((arg, index) => arg === 'simulate' && index > 0 && /^servelab(\.js)?$/.test(basename(server.command[index - 1]!)));
  if (at < 0) return undefined;
  // The port and host are picked at launch and change nothing about speed.
  const argv = server.command.slice(at + 1).map((arg) => fillPlaceholders(arg, { port: 0, host: '127.0.0.1' }));
  const config = simConfigOfArgv(argv);
  if (!config) return undefined;
  const env: Record<string, string | undefined> = { ...process.env, ...server.env };
  for (const name of server.unsetEnv) delete env[name];
  const { maxBatch } = config.decode;
  return {
    startupMs: config.startup.loadMs,
    // Requests beyond --max-batch wait for a free slot: rounds of at most maxBatch.
    requestMs: (input, output, active) => Math.ceil(active / maxBatch) * expectedE2eMs(config, input, output, Math.min(active, maxBatch), env),
    basis: "the simulator's flags, no history",
  };
}

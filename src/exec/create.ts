import { hostname } from 'node:os';
import { LocalExecutor } from './local.js';
import { SshExecutor } from './ssh.js';
import type { Executor, ExecutorConfig } from './types.js';

/**
 * The executor an experiment's trials run on. A `slurm` experiment reaches this only inside a Slurm job
 * (`servelab run --run-id N --lane K` on the node): there the server runs on the job's own node,
 * so the job uses a local executor labelled with the node name.
 */
export async function createExecutor(config: ExecutorConfig, context: { workDir: string; jobTag?: string }): Promise<Executor> {
  switch (config.kind) {
    case 'local':
      return new LocalExecutor();
    case 'ssh':
      return new SshExecutor(config, context);
    case 'slurm':
      return new LocalExecutor(hostname());
  }
}

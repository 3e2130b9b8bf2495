import { z } from 'zod';

/** Slurm time limits: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or UNLIMITED. */
const SLURM_TIME = /^(UNLIMITED|infinite|\d+(:\d{1,2}){0,2}|\d+-\d{1,2}(:\d{1,2}){0,2})$/;

/** One line of text: a line break in a value would start a new line of the generated sbatch or shell script. */
const oneLine = (what: string) =>
  z
    .string()
    .min(1)
    .regex(/^[^\r\n\0]*$/, `${what} must be one line (no line breaks)`);
/** An sbatch directive word: `#SBATCH` lines are split on whitespace, so a space would make a second option. */
const directiveWord = (what: string) =>
  z
    .string()
    .min(1)
    .regex(/^[^\s\0]+$/, `${what} must be one word (no spaces or line breaks)`);

const localSchema = z.strictObject({ kind: z.literal('local').describe('Servers and the load client on this machine.') });

const sshSchema = z.strictObject({
  kind: z.literal('ssh').describe('Servers on an SSH host, each started detached there and reached through a port forward.'),
  host: z
    .string()
    .min(1, 'expected an ssh host (alias from ~/.ssh/config or user@host)')
    .meta({ description: 'Anything ssh accepts: an alias from ~/.ssh/config or user@host.', examples: ['gpu-box'] }),
  port: z.number().int().min(1).max(65535).optional().describe("SSH port; default: ssh's own (22 or ~/.ssh/config)."),
  identityFile: z.string().min(1).optional().describe('Private key file (ssh -i).'),
  sshOptions: z
    .array(z.string().regex(/^[A-Za-z][A-Za-z0-9]*[ =]/, 'expected an ssh option like "StrictHostKeyChecking=accept-new"'))
    .optional()
    .meta({ description: 'Extra ssh -o options.', examples: [['StrictHostKeyChecking=accept-new']] }),
  remoteServelab: oneLine('remoteServelab').optional().meta({ description: 'Command that runs servelab on the host.', default: 'servelab' }),
  remoteDir: oneLine('remoteDir').optional().meta({ description: 'Directory on the host for server logs and state.', default: '~/.servelab/remote' }),
  // Local by default: the client on this machine is what the user normally has; 'remote' opts out of network latency.
  client: z
    .enum(['local', 'remote'])
    .default('local')
    .describe(
      'Where the load client runs: local (this machine, through the forward) or remote (on the host, whose servelab it needs: no network latency in the figures).',
    ),
});

/** The sbatch settings of a Slurm job: the executor's, and a lane's `slurm:` over them. */
const sbatchShape = {
  partition: directiveWord('partition').optional().describe("#SBATCH --partition; default: the cluster's."),
  gpusPerJob: z.number().int().min(0).optional().describe('#SBATCH --gres=gpu:N; default: none asked.'),
  timeLimit: z
    .string()
    .regex(SLURM_TIME, 'expected a Slurm time limit like "90", "1:30:00" or "1-00:00:00"')
    .optional()
    .meta({ description: "#SBATCH --time; default: the partition's.", examples: ['1:30:00'] }),
  sbatchArgs: z
    .array(directiveWord('an sbatch argument').regex(/^--?[A-Za-z]/, 'expected an sbatch option like "--account=foo"'))
    .optional()
    .meta({ description: 'Extra #SBATCH options, one word each.', examples: [['--account=foo']] }),
};

const slurmSchema = z.strictObject({
  kind: z
    .literal('slurm')
    .describe(
      "Each lane is one sbatch job (one job without lanes:) running the servers of every config in turn on its node, into this run's store (its path must be reachable there).",
    ),
  ...sbatchShape,
  retries: z
    .number()
    .int()
    .min(0)
    .max(100)
    .default(0)
    .describe("Times a lane's job that failed or was cancelled is resubmitted; it measures only the trials still missing."),
  remoteServelab: oneLine('remoteServelab').optional().describe('Command that runs servelab on the nodes; default: this servelab.'),
});

/** The `executor:` section of an experiment file; absent means run everything on this machine. */
export const executorConfigSchema = z.discriminatedUnion('kind', [localSchema, sshSchema, slurmSchema]).default({ kind: 'local' });

/** A lane's `slurm:`: its jobs' sbatch settings over the executor's. */
export const slurmLaneSchema = z.strictObject(sbatchShape);

/** Where one lane of an experiment runs (its `executor:`): this machine or an SSH host, no default. */
export const laneExecutorSchema = z.discriminatedUnion('kind', [localSchema, sshSchema]);

/** `executor:` as parsed; what each key means is in the schema's descriptions (and docs/experiment-file.md). */
export type ExecutorConfig = z.output<typeof executorConfigSchema>;

/** A lane's `slurm:` as parsed. */
export type SlurmLaneSettings = z.output<typeof slurmLaneSchema>;

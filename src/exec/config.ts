import { z } from 'zod';
import type { ExecutorConfig } from './types.js';

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

const localSchema = z.strictObject({ kind: z.literal('local') });

const sshSchema = z.strictObject({
  kind: z.literal('ssh'),
  host: z.string().min(1, 'expected an ssh host (alias from ~/.ssh/config or user@host)'),
  port: z.number().int().min(1).max(65535).optional(),
  identityFile: z.string().min(1).optional(),
  sshOptions: z.array(z.string().regex(/^[A-Za-z][A-Za-z0-9]*[ =]/, 'expected an ssh option like "StrictHostKeyChecking=accept-new"')).optional(),
  remoteServelab: oneLine('remoteServelab').optional(),
  remoteDir: oneLine('remoteDir').optional(),
  // Local by default: the client on this machine is what the user normally has; 'remote' opts out of network latency.
  client: z.enum(['local', 'remote']).default('local'),
});

const slurmSchema = z.strictObject({
  kind: z.literal('slurm'),
  partition: directiveWord('partition').optional(),
  gpusPerJob: z.number().int().min(0).optional(),
  timeLimit: z.string().regex(SLURM_TIME, 'expected a Slurm time limit like "90", "1:30:00" or "1-00:00:00"').optional(),
  sbatchArgs: z.array(directiveWord('an sbatch argument').regex(/^--?[A-Za-z]/, 'expected an sbatch option like "--account=foo"')).optional(),
  retries: z.number().int().min(0).max(100).default(0),
  remoteServelab: oneLine('remoteServelab').optional(),
});

/** The `executor:` section of an experiment file; absent means run everything on this machine. */
export const executorConfigSchema = z.discriminatedUnion('kind', [localSchema, sshSchema, slurmSchema]).default({ kind: 'local' });

// Compile-time guarantee that the parsed value is exactly the contract type.
type Parsed = z.output<typeof executorConfigSchema>;
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const parsedMatchesContract: Same<Parsed, ExecutorConfig> = true;
void parsedMatchesContract;

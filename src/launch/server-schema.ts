import { z } from 'zod';
import { durationSchema } from '../config/duration.js';
import type { SettingNames } from '../ready/wait.js';
import { DEFAULT_READY_TIMEOUT_MS } from '../util/defaults.js';
import { PORT_RANGE_RULE, parsePortRange } from './port-range.js';

/**
 * One server as a file describes it: the experiment file's `server:` block and the `servelab launch --config` file
 * read these keys with these rules, so a block accepted by one is accepted (or rejected, at the same key) by the other.
 */

/** A command as a list, or one string split on whitespace (use the list form for arguments containing spaces). */
export const argvSchema = z.union([z.array(z.string()), z.string().transform((text) => text.trim().split(/\s+/).filter(Boolean))]);

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

// A name like "A=B" would become the assignment A="B=value" in the server's environment.
export const envSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String)).superRefine((env, ctx) => {
  for (const name of Object.keys(env)) {
    if (!ENV_NAME.test(name))
      ctx.addIssue({ code: 'custom', path: [name], message: 'expected an environment variable name (letters, digits, "_"; not starting with a digit)' });
  }
});

export const envNameList = z.array(z.string().regex(ENV_NAME, 'expected an environment variable name'));

export const portSchema = z.number().int().min(1).max(65535);

const portRangeSchema = z.string().transform((text, ctx) => {
  const range = parsePortRange(text);
  if (!range) {
    ctx.addIssue({ code: 'custom', message: `${PORT_RANGE_RULE}, got ${JSON.stringify(text)}` });
    return z.NEVER;
  }
  return range;
});

export const serverShape = {
  command: argvSchema
    .refine((argv) => argv.length > 0, 'expected a non-empty command')
    .meta({
      description: 'The server command, a list or one string split on whitespace.',
      examples: [['vllm', 'serve', 'meta-llama/Llama-3.1-8B-Instruct', '--port', '{port}']],
    }),
  // An `env:` left empty in YAML is null: the same as no entries.
  env: envSchema
    .nullish()
    .transform((env) => env ?? {})
    .meta({ description: "Variables set in the server's environment.", examples: [{ NCCL_PROTO: 'LL' }] }),
  unsetEnv: envNameList
    .nullish()
    .transform((names) => names ?? [])
    .describe("Variables removed from the server's environment."),
  cwd: z.string().optional().describe('Working directory of the server, relative to the file.'),
  port: portSchema.optional().describe('Fixed port for {port}; default: a free port picked at each launch.'),
  portRange: portRangeSchema
    .optional()
    .meta({ description: 'Where that free port is picked (a firewall opening); default: below the ephemeral range.', examples: ['18000-18100'] }),
  readyTimeout: durationSchema.default(DEFAULT_READY_TIMEOUT_MS).describe('How long the server may take to become ready.'),
  verifyServing: z
    .boolean()
    .optional()
    .describe("Check /v1/models and one tiny generation after health; default: true in an experiment, the profile's in launch."),
  model: z.string().min(1).optional().describe('Model name the client sends; default: the first of /v1/models.'),
};

type ServerFields = { port?: number | undefined; portRange?: unknown };

/** A fixed port and a range to pick one from contradict each other. */
export function checkPorts(server: ServerFields, ctx: z.core.$RefinementCtx<ServerFields>): void {
  if (server.port !== undefined && server.portRange !== undefined)
    ctx.addIssue({ code: 'custom', path: ['portRange'], message: 'give either port (a fixed one) or portRange (where a free one is picked), not both' });
}

export const serverSchema = z.strictObject(serverShape).superRefine(checkPorts);

/** The experiment file's names for what the readiness hints tell the user to change (`raise server.readyTimeout`). */
export const SERVER_FILE_SETTINGS: SettingNames = {
  timeout: 'server.readyTimeout',
  profile: 'profile',
  model: 'server.model',
  verifyOff: 'server.verifyServing: false',
};

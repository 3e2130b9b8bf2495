import { createHash } from 'node:crypto';
import { z } from 'zod';
import { loadConfigFile } from '../config/load.js';
import { profileDefinitionSchema } from '../profiles/user.js';
import { MASKING } from '../util/redact.js';

/** `servelab launch --config server.yaml`: the same settings as the flags; flags given on the command line win. */
export const serverConfigSchema = z
  .object({
    command: z.array(z.string()).min(1),
    env: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String)).default({}),
    unsetEnv: z.array(z.string()).default([]),
    cwd: z.string().optional(),
    /** A profile name, or an inline definition (`extends: vllm` plus overrides). */
    profile: z.union([z.string(), profileDefinitionSchema]).optional(),
    host: z.string().optional(),
    port: z.number().int().min(1).max(65535).optional(),
    log: z.string().optional(),
    timeout: z.union([z.string(), z.number()]).optional(),
    verify: z.boolean().optional(),
    model: z.string().optional(),
  })
  .strict();

export type ServerConfig = z.output<typeof serverConfigSchema>;

export function loadServerConfig(path: string): ServerConfig {
  return loadConfigFile(path, serverConfigSchema);
}

/**
 * Identifies a server configuration across startups: same argv (before port substitution, so a new free port
 * is still the same config), same environment changes, same profile.
 */
export function configKey(parts: { command: string[]; env: Record<string, string>; unsetEnv?: string[]; profile: string }): string {
  const canonical = JSON.stringify({
    // Masked: the key is stored and unsalted, so a hash over a secret would let a weak one be guessed back.
    command: MASKING.args(parts.command),
    env: Object.entries(MASKING.env(parts.env)).sort(([a], [b]) => a.localeCompare(b)),
    unsetEnv: [...(parts.unsetEnv ?? [])].sort(),
    profile: parts.profile,
  });
  return `launch:${createHash('sha256').update(canonical).digest('hex').slice(0, 16)}`;
}

/** `servelab wait` has no command: the profile and URL identify what is being waited for. */
export function waitKey(profile: string, baseUrl: string): string {
  return `wait:${profile}:${baseUrl}`;
}

import { z } from 'zod';
import { loadConfigFile } from '../config/load.js';
import { profileDefinitionSchema } from '../profiles/user.js';
import { type ServerIdentityParts, serverIdentity } from './identity.js';

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

/** Startup-history key of a launched server: the one server identity, namespaced apart from `wait` keys. */
export function configKey(parts: ServerIdentityParts): string {
  return `launch:${serverIdentity(parts)}`;
}

/** `servelab wait` has no command: the profile and URL identify what is being waited for. */
export function waitKey(profile: string, baseUrl: string): string {
  return `wait:${profile}:${baseUrl}`;
}

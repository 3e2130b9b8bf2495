import { z } from 'zod';
import { renamedKeys } from '../config/issues.js';
import { loadConfigFile } from '../config/load.js';
import { profileDefinitionSchema } from '../profiles/user.js';
import { type ServerIdentityParts, serverIdentity } from './identity.js';
import { checkPorts, serverShape } from './server-schema.js';

/**
 * `servelab launch --config server.yaml`: the experiment file's `server:` keys (server-schema.ts), plus what only a
 * lone launch decides: the profile, the bind host and the log file. Flags given on the command line win.
 */
export const launchFileSchema = renamedKeys(
  z
    .strictObject({
      ...serverShape,
      /** A profile name, or an inline definition (`extends: vllm` plus overrides). */
      profile: z.union([z.string(), profileDefinitionSchema]).optional(),
      host: z.string().min(1).optional(),
      log: z.string().min(1).optional(),
    })
    .superRefine(checkPorts),
  // The file's keys before it shared the experiment's server schema.
  { timeout: 'readyTimeout', verify: 'verifyServing' },
);

export type LaunchFile = z.output<typeof launchFileSchema>;

export function loadLaunchFile(path: string): LaunchFile {
  return loadConfigFile(path, launchFileSchema);
}

/** Startup-history key of a launched server: the one server identity, namespaced apart from `wait` keys. */
export function configKey(parts: ServerIdentityParts): string {
  return `launch:${serverIdentity(parts)}`;
}

/** `servelab wait` has no command: the profile and URL identify what is being waited for. */
export function waitKey(profile: string, baseUrl: string): string {
  return `wait:${profile}:${baseUrl}`;
}

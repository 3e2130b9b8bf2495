import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { loadConfigFile } from '../config/load.js';
import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import { BUILTIN_PROFILES } from './builtin.js';
import { BACKEND_KINDS, type ServerProfile } from './types.js';

const regex = z.string().transform((source, ctx) => {
  try {
    return new RegExp(source);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: `invalid regular expression: ${(error as Error).message}` });
    return z.NEVER;
  }
});

/**
 * A profile written by the user. Every field is optional when `extends` names a base; its patterns are tried
 * before the base's, so a user pattern wins over a built-in one that matches the same line.
 */
export const profileDefinitionSchema = z
  .object({
    extends: z.string().optional(),
    healthPath: z.string().startsWith('/').optional(),
    openaiCompatible: z.boolean().optional(),
    modelsPath: z.string().startsWith('/').optional(),
    metricsPath: z.string().startsWith('/').optional(),
    defaultBackend: z.enum(BACKEND_KINDS).optional(),
    defaultPort: z.number().int().min(1).max(65535).optional(),
    healthTextPattern: regex.optional(),
    checkedVersions: z.string().min(1).optional(),
    phasePatterns: z.array(z.object({ name: z.string().min(1), pattern: regex }).strict()).optional(),
    fatalPatterns: z.array(z.object({ name: z.string().min(1), pattern: regex, hint: z.string().min(1) }).strict()).optional(),
  })
  .strict();

export type ProfileDefinition = z.output<typeof profileDefinitionSchema>;

export const profilesFileSchema = z.object({ profiles: z.record(z.string(), profileDefinitionSchema) }).strict();

/** `--profiles FILE`, else $SERVELAB_PROFILES, else ~/.servelab/profiles.yaml when it exists. */
export function userProfilesPath(explicit?: string): string | undefined {
  if (explicit) return resolve(explicit);
  if (process.env.SERVELAB_PROFILES) return resolve(process.env.SERVELAB_PROFILES);
  const fallback = join(homedir(), '.servelab', 'profiles.yaml');
  return existsSync(fallback) ? fallback : undefined;
}

export function loadUserProfiles(path: string | undefined): Record<string, ProfileDefinition> {
  return path ? loadConfigFile(path, profilesFileSchema).profiles : {};
}

/** Resolve a profile name through user definitions (and their `extends` chains) down to the built-ins. */
export function resolveProfile(name: string, userDefinitions: Record<string, ProfileDefinition> = {}, seen: string[] = []): ServerProfile {
  if (seen.includes(name)) {
    throw new UserError(`profile "${name}" extends itself (${[...seen, name].join(' → ')})`, 'break the `extends` cycle in your profiles file', ExitCode.usage);
  }
  const definition = userDefinitions[name];
  if (definition) return applyDefinition(name, definition, userDefinitions, [...seen, name]);
  const builtin = BUILTIN_PROFILES[name];
  if (builtin) return builtin;
  const known = [...Object.keys(BUILTIN_PROFILES), ...Object.keys(userDefinitions)].join(', ');
  throw new UserError(`unknown server profile "${name}"`, `use one of: ${known} (or define it in a profiles file)`, ExitCode.usage);
}

/** A definition applied on top of its base; `name` labels an inline definition that has none of its own. */
export function applyDefinition(
  name: string,
  definition: ProfileDefinition,
  userDefinitions: Record<string, ProfileDefinition> = {},
  seen: string[] = [],
): ServerProfile {
  const base = resolveProfile(definition.extends ?? 'openai', userDefinitions, seen);
  const { extends: _base, phasePatterns, fatalPatterns, ...fields } = definition;
  const defined = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
  return {
    ...base,
    ...defined,
    name,
    phasePatterns: [...(phasePatterns ?? []), ...base.phasePatterns],
    fatalPatterns: [...(fatalPatterns ?? []), ...base.fatalPatterns],
  };
}

/** Guess the profile from the server command, so `servelab launch -- vllm serve M` needs no --profile. */
export function inferProfileName(command: readonly string[]): string {
  const words = command.slice(0, 4).join(' ');
  if (/\bvllm\b/.test(words)) return 'vllm';
  if (/\bsglang\b/.test(words)) return 'sglang';
  if (/text-generation-launcher|text-generation-inference/.test(words)) return 'tgi';
  if (/llama-server|llama\.cpp|llama_cpp/.test(words)) return 'llamacpp';
  if (/\bollama\b/.test(words)) return 'ollama';
  if (/servelab(\.js)?\b.*\bsimulate\b/.test(words)) return 'simulator';
  return 'openai';
}

import type { ServerSpec } from './types.js';

/** Values that `{port}` and `{host}` stand for in a server's argv and env values. */
export interface PlaceholderValues {
  port: number;
  host: string;
}

const PLACEHOLDER = /\{(port|host)\}/;

export function fillPlaceholders(text: string, values: PlaceholderValues): string {
  return text.replaceAll('{port}', String(values.port)).replaceAll('{host}', values.host);
}

/** The argv and spec env with every placeholder filled: what the server is started with. */
export function fillSpec(spec: Pick<ServerSpec, 'command' | 'env'>, values: PlaceholderValues): { command: string[]; env: Record<string, string> } {
  return {
    command: spec.command.map((part) => fillPlaceholders(part, values)),
    env: Object.fromEntries(Object.entries(spec.env).map(([key, value]) => [key, fillPlaceholders(value, values)])),
  };
}

/**
 * The server's environment as a fingerprint records it: a variable the spec set from a template keeps the template
 * (`VLLM_PORT: "{port}"`), because the port picked at launch is no property of the configuration.
 */
export function templatedEnv(actual: Record<string, string>, specEnv: Record<string, string>): Record<string, string> {
  const env = { ...actual };
  for (const [key, template] of Object.entries(specEnv)) if (PLACEHOLDER.test(template)) env[key] = template;
  return env;
}

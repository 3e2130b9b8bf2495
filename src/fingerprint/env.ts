import { createHash } from 'node:crypto';

/** Environment variables that change what an inference server does (glob patterns: `*` any run, `?` one char). */
export const DEFAULT_ENV_PATTERNS: readonly string[] = [
  'NCCL_*',
  'CUDA_*',
  'CUBLAS_*',
  'CUDNN_*',
  'NVIDIA_*',
  'VLLM_*',
  'SGLANG_*',
  'TORCH_*',
  'TORCHINDUCTOR_*',
  'PYTORCH_*',
  'OMP_*',
  'MKL_*',
  'HF_*',
  'TRANSFORMERS_*',
  'TOKENIZERS_PARALLELISM',
  'FLASHINFER_*',
  'TRITON_*',
  'HIP_*',
  'ROCR_*',
  'HSA_*',
  'GGML_*',
  'LLAMA_*',
  'OLLAMA_*',
  'UCX_*',
  'LD_LIBRARY_PATH',
  'LD_PRELOAD',
];

/**
 * Names whose values are secrets. Matched case-insensitively against env names and against CLI flags normalised to
 * ENV style (`--hf-token` → HF_TOKEN). TOKEN and KEY are matched as whole `_` words, not substrings, so tuning knobs
 * such as MAX_NUM_BATCHED_TOKENS or TOKENIZERS_PARALLELISM stay readable.
 */
export const DEFAULT_REDACT_PATTERNS: readonly string[] = [
  'TOKEN',
  '*_TOKEN',
  'TOKEN_*',
  '*_TOKEN_*',
  'KEY',
  '*_KEY',
  'KEY_*',
  '*_KEY_*',
  '*APIKEY*',
  '*SECRET*',
  '*PASSWORD*',
  '*PASSWD*',
  '*CREDENTIAL*',
];

export function globToRegExp(pattern: string, flags = ''): RegExp {
  const body = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${body}$`, flags);
}

function matcher(patterns: readonly string[], caseInsensitive: boolean): (name: string) => boolean {
  const regexps = patterns.map((pattern) => globToRegExp(pattern, caseInsensitive ? 'i' : ''));
  return (name) => regexps.some((regexp) => regexp.test(name));
}

/**
 * Replacement for a secret. It carries a short hash of the value so that a changed secret still shows up in a
 * fingerprint diff (two different tokens never look identical) without the value itself being stored.
 */
export function redactValue(value: string): string {
  return `<redacted:${createHash('sha256').update(value).digest('hex').slice(0, 8)}>`;
}

/** The variables of `env` that match `envPatterns` (case-sensitive, as on Linux), secret-named ones redacted. */
export function captureEnv(
  env: Record<string, string>,
  envPatterns: readonly string[] = DEFAULT_ENV_PATTERNS,
  redactPatterns: readonly string[] = DEFAULT_REDACT_PATTERNS,
): Record<string, string> {
  const wanted = matcher(envPatterns, false);
  const secret = matcher(redactPatterns, true);
  const captured: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (wanted(name)) captured[name] = secret(name) ? redactValue(value) : value;
  }
  return captured;
}

/**
 * argv with the values of secret-named flags redacted: `--api-key X`, `--api-key=X`, `--hf-token X`.
 * A flag followed by another `--flag` is treated as a boolean and nothing is redacted.
 */
export function redactArgs(argv: readonly string[], redactPatterns: readonly string[] = DEFAULT_REDACT_PATTERNS): string[] {
  const secret = matcher(redactPatterns, true);
  const flagName = (arg: string): string | undefined =>
    /^--?[A-Za-z]/.test(arg) ? arg.replace(/^-+/, '').replace(/=.*$/s, '').replace(/[-.]/g, '_') : undefined;
  const result: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const name = flagName(arg);
    if (name === undefined || !secret(name)) {
      result.push(arg);
      continue;
    }
    const equals = arg.indexOf('=');
    if (equals >= 0) {
      result.push(`${arg.slice(0, equals + 1)}${redactValue(arg.slice(equals + 1))}`);
      continue;
    }
    result.push(arg);
    const next = argv[i + 1];
    if (next !== undefined && !next.startsWith('--')) {
      result.push(redactValue(next));
      i++;
    }
  }
  return result;
}

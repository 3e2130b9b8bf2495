import { globToRegExp, type Redactor, redactor } from '../util/redact.js';

export { globToRegExp };

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

function matcher(patterns: readonly string[]): (name: string) => boolean {
  const regexps = patterns.map((pattern) => globToRegExp(pattern));
  return (name) => regexps.some((regexp) => regexp.test(name));
}

/** The variables of `env` that match `envPatterns` (case-sensitive, as on Linux), secrets redacted. */
export function captureEnv(
  env: Record<string, string>,
  envPatterns: readonly string[] = DEFAULT_ENV_PATTERNS,
  secrets: Redactor = redactor(),
): Record<string, string> {
  const wanted = matcher(envPatterns);
  return secrets.env(Object.fromEntries(Object.entries(env).filter(([name]) => wanted(name))));
}

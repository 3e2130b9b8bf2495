import type { FatalPattern, LogPattern, ServerProfile } from './types.js';

/**
 * Failures shared by every server: each one means the process will never serve, so waiting on would only
 * burn the timeout. Ordered most specific first, because the first match names the failure.
 */
export const COMMON_FATAL_PATTERNS: FatalPattern[] = [
  {
    name: 'CUDA out of memory',
    pattern: /CUDA out of memory|torch\.(cuda\.)?OutOfMemoryError|cudaErrorMemoryAllocation|out of memory allocating/i,
    hint: 'lower --gpu-memory-utilization / --max-model-len / batch size, use more GPUs, or free the GPU (nvidia-smi)',
  },
  {
    name: 'no KV cache memory',
    pattern: /No available memory for the cache blocks|larger than the available KV cache memory|Not enough memory/i,
    hint: 'lower --max-model-len or raise the GPU memory fraction the server may use',
  },
  {
    name: 'address already in use',
    // Python (uvicorn: "[Errno 98] error while attempting to bind"), Node, Go, Rust ("os error 98"), llama.cpp.
    pattern: /Address already in use|EADDRINUSE|\[Errno 98\]|error while attempting to bind|bind\(\) failed|couldn't bind HTTP server socket/i,
    hint: 'another process holds the port: pick another --port, or stop it (ss -ltnp)',
  },
  {
    // PyTorch's ProcessGroupNCCL watchdog ("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(...)
    // ran for 600031 milliseconds before timing out") and a rendezvous that never completes (c10d store).
    name: 'NCCL timeout',
    pattern:
      /Watchdog caught collective operation timeout|Some NCCL operations have failed or timed out|watchdog got stuck|NCCL communicator was aborted|DistStoreError: Timed out|Timed out after \d+ seconds waiting for clients/,
    hint: 'a collective never completed: a rank died or hangs, or the interconnect is misconfigured; check NCCL_* variables and rerun with NCCL_DEBUG=INFO',
  },
  {
    // NCCL's own warnings ("host:1234:5678 [0] NCCL WARN ..."), its result codes, and PyTorch's wrapper
    // ("NCCL error in: .../ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.11.4").
    name: 'NCCL error',
    pattern:
      /NCCL error|NCCL WARN|nccl(InternalError|SystemError|UnhandledCudaError|InvalidUsage|InvalidArgument|RemoteError)|unhandled (system|cuda) error|ncclCommInit\w* failed|DistBackendError/,
    hint: 'check NCCL_* variables, GPU visibility and interconnect; rerun with NCCL_DEBUG=INFO for detail',
  },
  {
    name: 'CUDA error',
    pattern: /RuntimeError: CUDA error|CUDA driver version is insufficient|no CUDA-capable device|CUBLAS_STATUS_\w+_ERROR/,
    hint: 'check the driver/toolkit match and CUDA_VISIBLE_DEVICES (nvidia-smi)',
  },
  {
    name: 'Python exception',
    pattern: /Traceback \(most recent call last\):/,
    hint: 'read the exception at the end of the log tail above',
  },
  {
    name: 'killed',
    // The shell's report of a SIGKILL (often the kernel OOM killer), not any line that merely contains "killed".
    pattern: /^Killed\s*$|\bKilled\s+\S.*\bpython|Out of memory: Killed process/,
    hint: 'the process was killed, often by the host OOM killer: check `dmesg` and host RAM',
  },
];

function fatal(...specific: FatalPattern[]): FatalPattern[] {
  return [...specific, ...COMMON_FATAL_PATTERNS];
}

function phases(...pairs: Array<[string, RegExp]>): LogPattern[] {
  return pairs.map(([name, pattern]) => ({ name, pattern }));
}

const vllm: ServerProfile = {
  name: 'vllm',
  healthPath: '/health',
  openaiCompatible: true,
  modelsPath: '/v1/models',
  metricsPath: '/metrics',
  defaultBackend: 'openai-completions',
  defaultPort: 8000,
  // vLLM refuses connections until its engine is up; after that /health (vllm/entrypoints/openai/api_server.py,
  // `health`) answers 503 only on EngineDeadError, so a 503 means dead, never "still starting".
  healthUnavailable: 'dead',
  // Served when VLLM_SERVER_DEV_MODE=1; answers {"success": false} when blocks are still held (resetCache checks).
  cacheReset: { kind: 'endpoint', path: '/reset_prefix_cache' },
  phasePatterns: phases(
    ['initializing engine', /Initializing a V\d LLM engine|Initializing an LLM engine|vLLM API server version/],
    ['loading model', /Starting to load model|Loading model from scratch/],
    ['loading weights', /Loading model weights|Loading safetensors checkpoint shards/],
    ['weights loaded', /Loading weights took|Model loading took/],
    ['profiling memory', /Memory profiling|GPU KV cache size|# GPU blocks/],
    ['capturing CUDA graphs', /Capturing CUDA graph|Capturing cudagraphs/i],
    ['engine initialized', /Graph capturing finished|init engine .* took/],
    ['starting API server', /Starting vLLM API server|Available routes are/],
    ['Uvicorn running', /Uvicorn running on|Application startup complete/],
  ),
  fatalPatterns: fatal({
    name: 'engine failed to start',
    pattern: /Engine core initialization failed|EngineDeadError|RuntimeError: Engine process failed to start/,
    hint: 'the engine core died: read the first error in the log tail above',
  }),
};

const sglang: ServerProfile = {
  name: 'sglang',
  healthPath: '/health',
  openaiCompatible: true,
  modelsPath: '/v1/models',
  metricsPath: '/metrics',
  defaultBackend: 'openai-completions',
  defaultPort: 30000,
  // SGLang's /health (http_server.py `health_generate`) runs a one-token generation and waits up to
  // SGLANG_HEALTH_CHECK_TIMEOUT (20 s) for the scheduler's answer: a 2 s probe would flap under load.
  healthProbeTimeoutMs: 25_000,
  // ... and answers no sooner than its first 1 s poll for scheduler output: liveness during load asks the model list.
  livenessPath: '/v1/models',
  // /flush_cache answers 400 while requests run or wait; `timeout` (seconds) lets it wait for them to drain first.
  cacheReset: { kind: 'endpoint', path: '/flush_cache?timeout=30' },
  phasePatterns: phases(
    ['loading weights', /Load weight begin/],
    ['weights loaded', /Load weight end/],
    ['allocating KV cache', /KV Cache is allocated|Memory pool end/],
    ['capturing CUDA graphs', /Capture cuda graph begin|Capture (cuda|CUDA) graph/],
    ['Uvicorn running', /Uvicorn running on|Application startup complete/],
    ['warming up', /POST \/generate HTTP|End of prefill warmup/],
    ['fired up', /The server is fired up and ready to roll/],
  ),
  fatalPatterns: fatal({
    name: 'scheduler died',
    pattern: /Scheduler hit an exception|Rank \d+ scheduler is dead|Received sigquit from a child process/,
    hint: 'a scheduler process crashed: read the first exception in the log tail above',
  }),
};

const tgi: ServerProfile = {
  name: 'tgi',
  // TGI's /health runs a tiny prefill when the model has not served recently, so a 200 already proves serving.
  healthPath: '/health',
  openaiCompatible: false,
  modelsPath: '/v1/models',
  metricsPath: '/metrics',
  defaultBackend: 'tgi',
  defaultPort: 3000,
  phasePatterns: phases(
    ['downloading weights', /Starting download process|Download file:/],
    ['starting shards', /Starting shard/],
    ['waiting for shards', /Waiting for shard to be ready/],
    ['shards ready', /Shard ready in/],
    ['warming up', /Warming up model/],
    ['starting webserver', /Starting Webserver|Setting max batch total tokens/],
    ['connected', /^.*\bConnected\s*$/],
  ),
  fatalPatterns: fatal({
    name: 'shard failed',
    pattern: /Shard \d+ failed to start|Shard process was signaled|Error when initializing model/,
    hint: 'a model shard failed to start: read the shard error in the log tail above',
  }),
};

const llamacpp: ServerProfile = {
  name: 'llamacpp',
  // llama-server answers 503 {"error":{"message":"Loading model"}} until the model is loaded, then {"status":"ok"}.
  healthPath: '/health',
  openaiCompatible: true,
  modelsPath: '/v1/models',
  metricsPath: '/metrics',
  defaultBackend: 'openai-completions',
  defaultPort: 8080,
  cacheReset: { kind: 'cache-prompt-off' },
  phasePatterns: phases(
    ['loading model', /loading model|llama_model_load|llama_model_loader: loaded meta data/],
    ['loading tensors', /load_tensors:/],
    ['creating context', /llama_context|llama_new_context_with_model|llama_kv_cache/],
    ['warming up', /warming up the model/],
    ['model loaded', /model loaded/],
    ['listening', /server is listening on|HTTP server is listening/],
  ),
  fatalPatterns: fatal(
    {
      name: 'model failed to load',
      pattern: /failed to load model|error loading model|unable to load model|exiting due to model loading error/i,
      hint: 'check the model path (-m) and that the GGUF file is complete',
    },
    {
      name: 'failed to allocate buffer',
      pattern: /failed to allocate .* buffer|ggml_backend_.*alloc.* failed/,
      hint: 'lower -ngl / context size (-c) or use a smaller quantization',
    },
  ),
};

const ollama: ServerProfile = {
  name: 'ollama',
  // Ollama's root answers "Ollama is running" as plain text; models load lazily on first request.
  healthPath: '/',
  healthTextPattern: /^Ollama is running$/,
  openaiCompatible: true,
  modelsPath: '/v1/models',
  defaultBackend: 'openai-chat',
  defaultPort: 11434,
  phasePatterns: phases(['listening', /Listening on .*\(version/], ['inference compute found', /inference compute/]),
  fatalPatterns: fatal({
    name: 'model runner failed',
    pattern: /llama runner process has terminated|error loading llama server/,
    hint: 'the model runner crashed: check GPU memory and the model blob (ollama pull)',
  }),
};

const openai: ServerProfile = {
  name: 'openai',
  healthPath: '/health',
  openaiCompatible: true,
  modelsPath: '/v1/models',
  defaultBackend: 'openai-completions',
  phasePatterns: phases(['Uvicorn running', /Uvicorn running on|Application startup complete/], ['listening', /listening on/i]),
  fatalPatterns: fatal(),
};

/** servelab's own simulator (`servelab simulate`), whose log imitates vLLM's startup. */
const simulator: ServerProfile = {
  ...vllm,
  name: 'simulator',
  defaultPort: undefined,
  // The default simulator answers 503 while loading (see `simulate --engine vllm` for vLLM's own semantics).
  healthUnavailable: 'starting',
  phasePatterns: [...vllm.phasePatterns, ...phases(['simulator listening', /simulator listening on|servelab simulator/i])],
};

export const BUILTIN_PROFILES: Readonly<Record<string, ServerProfile>> = { vllm, sglang, tgi, llamacpp, ollama, openai, simulator };

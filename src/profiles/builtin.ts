import type { FatalPattern, LogPattern, ServerProfile } from './types.js';

/**
 * Where each vLLM/SGLang pattern comes from: `file:line` is the logger call as the engine's own log line names it
 * (vLLM prints `[file.py:line]`), or the source function; the issue is a public log that shows the line. Checked
 * against vLLM 0.19 and SGLang 0.5.15 (the versions in `checkedVersions`); test/fixtures/engine-logs/ replays them.
 */

/** NCCL's ncclIbAsyncThreadMain (src/transport/net_ib.cc) WARNs every IB async event; these ones are a port coming up. */
const BENIGN_IB_EVENT = String.raw`NET\/IB : (?:\S+ )?Got async event : (?:port active|client reregistration|LID change|GID table change|SM change|P_Key change)`;

/**
 * A server's word that its port was taken: Python (uvicorn: "[Errno 98] error while attempting to bind"), Node, Go,
 * Rust ("os error 98"), llama.cpp ("couldn't bind HTTP server socket"). A fatal line for every profile, and what
 * tells a launch that a port it picked was lost before the bind (launch/chosen-port.ts).
 */
export const PORT_IN_USE = /Address already in use|EADDRINUSE|\[Errno 98\]|error while attempting to bind|bind\(\) failed|couldn't bind HTTP server socket/i;

/**
 * Root causes shared by every server: each one means the process will never serve, so waiting on would only burn
 * the timeout. Ordered most specific first, because among the fatal lines of one failure the most specific names it.
 */
export const COMMON_CAUSE_PATTERNS: FatalPattern[] = [
  {
    // torch's OutOfMemoryError; the driver's own word (club-3090#60: "RuntimeError: CUDA driver error: out of
    // memory"); torch >= 2.9 raises torch.AcceleratorError for CUDA errors ("CUDA error: out of memory"); ggml's
    // "cudaMalloc failed: out of memory" inside Ollama's "llama runner process has terminated: …".
    name: 'CUDA out of memory',
    pattern:
      /CUDA out of memory|torch\.(cuda\.)?OutOfMemoryError|cudaErrorMemoryAllocation|out of memory allocating|CUDA (driver )?error: out of memory|cudaMalloc failed: out of memory/i,
    hint: 'lower --gpu-memory-utilization / --max-model-len / batch size, use more GPUs, or free the GPU (nvidia-smi)',
  },
  {
    // vllm/v1/worker/gpu_worker.py init_device (vllm#25837): another process holds part of the GPU.
    name: 'GPU memory taken',
    pattern: /Free memory on device .* on startup is less than desired GPU memory utilization/,
    hint: 'another process uses the GPU: stop it (nvidia-smi) or lower --gpu-memory-utilization',
  },
  {
    // vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory ("larger than the available KV cache memory",
    // vllm#27508, vllm#34076); SGLang's model_runner KV sizing ("Loaded weights leave no GPU memory for the KV cache",
    // "Not enough memory. Please try to increase --mem-fraction-static", sglang#4330); vLLM V0's block check.
    name: 'no KV cache memory',
    pattern:
      /No available memory for the cache blocks|larger than the available KV cache memory|leave no GPU memory for the KV cache|Not enough memory\. Please try to increase --mem-fraction-static|larger than the maximum number of tokens that can be stored in KV cache/,
    hint: 'lower --max-model-len / --context-length, or raise --gpu-memory-utilization / --mem-fraction-static',
  },
  {
    name: 'address already in use',
    pattern: PORT_IN_USE,
    hint: 'another process holds the port: pick another --port, or stop it (ss -ltnp)',
  },
  {
    // SGLang's wait_port_available (python/sglang/srt/utils): "metrics_port at 40290 is not available in 30 seconds"
    // (gpustack#5842); the internal ports of an earlier server that is still up.
    name: 'internal port in use',
    pattern: /port at \d+ is not available in \d+ seconds/,
    hint: 'a previous server still holds its internal ports: stop it (ss -ltnp), or pass other ports',
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
    // ("NCCL error in: .../ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.11.4"); vLLM's pynccl
    // ("RuntimeError: NCCL error: unhandled system error", vllm#39774). Not the benign IB port events.
    name: 'NCCL error',
    pattern: new RegExp(
      `NCCL error|NCCL WARN (?!${BENIGN_IB_EVENT})|nccl(InternalError|SystemError|UnhandledCudaError|InvalidUsage|InvalidArgument|RemoteError)|unhandled (system|cuda) error|ncclCommInit\\w* failed|DistBackendError`,
    ),
    hint: 'check NCCL_* variables, GPU visibility and interconnect; rerun with NCCL_DEBUG=INFO for detail',
  },
  {
    // torch >= 2.9 raises torch.AcceleratorError for CUDA errors (vllm#37159, LlamaFactory#10240); vLLM V0's
    // model_runner_base.py _wrapper re-raises a fault while serving as "RuntimeError: Error in model execution: CUDA
    // error: an illegal memory access was encountered" (vllm#11366, vllm#12233).
    name: 'CUDA error',
    pattern:
      /RuntimeError: (Error in model execution: )?CUDA error|torch\.AcceleratorError: CUDA error|CUDA driver version is insufficient|no CUDA-capable device|CUBLAS_STATUS_\w+_ERROR/,
    hint: 'check the driver/toolkit match and CUDA_VISIBLE_DEVICES (nvidia-smi)',
  },
];

/** Lines that only say that something failed: a cause found in the same window names the failure better. */
export const COMMON_GENERIC_PATTERNS: FatalPattern[] = [
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

/**
 * A profile's fatal list, most specific first: the engine's own causes, the common causes, then the engine's
 * wrappers ("engine failed to start", "scheduler died": they come before or around the real cause in the same
 * traceback), then the generic lines. The rank (position) decides which fatal line of a failure is reported.
 */
function fatal(causes: FatalPattern[] = [], wrappers: FatalPattern[] = []): FatalPattern[] {
  return [...causes, ...COMMON_CAUSE_PATTERNS, ...wrappers, ...COMMON_GENERIC_PATTERNS];
}

function phases(...pairs: Array<[string, RegExp]>): LogPattern[] {
  return pairs.map(([name, pattern]) => ({ name, pattern }));
}

const vllm: ServerProfile = {
  name: 'vllm',
  checkedVersions: 'vllm 0.19',
  // An 8B model on one GPU: weights, torch.compile and CUDA-graph capture take minutes (the fixtures'
  // "init engine … took" lines range from 1 s to 45 s after weights; cold compile caches add a minute or more).
  typicalStartupMs: 3 * 60_000,
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
    // entrypoints/openai/api_server.py ("vLLM API server version", newer "vLLM server version"); v1/engine/core.py:97
    // "Initializing a V1 LLM engine (v0.14.1)" (vllm#42510).
    ['initializing engine', /Initializing a V\d LLM engine|Initializing an LLM engine|vLLM (API )?server version/],
    // v1/worker/gpu_model_runner.py "Starting to load model" (vllm#12529).
    ['loading model', /Starting to load model|Loading model from scratch/],
    ['loading weights', /Loading model weights|Loading safetensors checkpoint shards/],
    // model_loader/default_loader.py:262 "Loading weights took"; gpu_model_runner.py "Model loading took" (granite-switch#128).
    ['weights loaded', /Loading weights took|Model loading took/],
    // compilation/backends.py:1130 "Dynamo bytecode transform time", :286 "Directly load the compiled graph(s)",
    // :393 "Compiling a graph for"; compilation/monitor.py:34/:48 "torch.compile takes/took N s in total" (vllm#39559).
    [
      'compiling (torch.compile)',
      /Dynamo bytecode transform time|Compiling a graph for|Directly load the compiled graph|torch\.compile (takes|took) [\d.]+ s in total/,
    ],
    // compilation/monitor.py:76 "Initial profiling/warmup run took"; gpu_model_runner.py:5914 "Profiling CUDA graph
    // memory", :5993 "Estimated CUDA graph memory" (vllm#39559); V0 worker.py "Memory profiling takes".
    ['profiling memory', /Memory profiling|Initial profiling\/warmup run|Profiling CUDA graph memory|Estimated CUDA graph memory/],
    // v1/worker/gpu_worker.py:349 "Available KV cache memory"; v1/core/kv_cache_utils.py:1229 "GPU KV cache size"
    // (vllm#28228); V0's "# GPU blocks" / "# cuda blocks".
    ['allocating KV cache', /Available KV cache memory|GPU KV cache size|# GPU blocks|# cuda blocks/],
    // gpu_model_runner.py "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE)" progress bar (vllm-windows-build#4).
    ['capturing CUDA graphs', /Capturing CUDA graph|Capturing cudagraphs/i],
    // gpu_model_runner.py:2196 "Graph capturing finished"; v1/engine/core.py:172 "init engine (profile, create kv
    // cache, warmup model) took" (vllm#19794).
    ['engine initialized', /Graph capturing finished|init engine .* took/],
    // api_server.py "Starting vLLM API server 0 on http://…", newer "Starting vLLM server on http://…"; "Available routes are".
    ['starting API server', /Starting vLLM (API )?server|Available routes are/],
    ['Uvicorn running', /Uvicorn running on|Application startup complete/],
  ),
  fatalPatterns: fatal(
    [],
    [
      {
        // v1/engine/utils.py wait_for_engine_startup "Engine core initialization failed. See root cause above."
        // (vllm#27508, vllm#19415): the cause is in the EngineCore lines before it.
        name: 'engine failed to start',
        pattern: /Engine core initialization failed|EngineCore failed to start|EngineDeadError|RuntimeError: Engine process failed to start/,
        hint: 'the engine core died: read the first error in the log tail above',
      },
      {
        // v1/engine/core.py run_engine_core: `logger.exception("EngineCore encountered a fatal error.")` when the busy
        // loop raises after startup ("[core.py:517]" in vllm 0.9, "[core.py:710]" in 0.11 logs); the engine is dead
        // from then on (_send_engine_dead), though the API server may answer for a while.
        name: 'engine died',
        pattern: /EngineCore encountered a fatal error/,
        hint: 'the engine core died while serving: read the exception after this line in the log, then restart the server',
      },
    ],
  ),
};

const sglang: ServerProfile = {
  name: 'sglang',
  checkedVersions: 'sglang 0.5.15',
  // As vLLM: weights, KV-pool sizing and CUDA-graph capture of a mid-size model.
  typicalStartupMs: 3 * 60_000,
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
  // ... which the tokenizer manager answers alone: it answers while the scheduler is dead (sglang#6624). http_server.py
  // `get_server_info` awaits tokenizer_manager.get_internal_state(), a round trip to every scheduler, so it proves
  // them alive; `/server_info` since #21463, `/get_server_info` before.
  schedulerPaths: ['/server_info', '/get_server_info'],
  // /flush_cache answers 400 while requests run or wait; `timeout` (seconds) lets it wait for them to drain first.
  cacheReset: { kind: 'endpoint', path: '/flush_cache?timeout=30' },
  phasePatterns: phases(
    // srt/model_executor/model_runner.py load_model: "Load weight begin. avail mem=…" / "Load weight end. …".
    ['loading weights', /Load weight begin/],
    ['weights loaded', /Load weight end/],
    // model_runner.py init_memory_pool "KV Cache is allocated" (before capture up to 0.5.x; after it from 0.5.15 as
    // "Post-capture KV sizing: KV cache allocated.").
    ['allocating KV cache', /KV Cache is allocated|KV cache allocated|Memory pool end/],
    // cuda_graph_runner.py "Capture cuda graph begin. This can take up to several minutes." (sglang#17392);
    // >= 0.5.15 model_runner_components/cuda_graph_setup.py "Capture target decode CUDA graph begin. backend=…";
    // the tqdm bar "Capturing batches (bs=… avail_mem=…)" (sglang#11716).
    ['capturing CUDA graphs', /Capture .*\b(cuda|CUDA) graph begin|Capturing batches \(bs=/],
    // "Capture cuda graph end. Time elapsed: 5.92 s" (sglang#11830) / "Capture target decode CUDA graph end. elapsed=".
    ['CUDA graphs captured', /Capture .*\b(cuda|CUDA) graph end/],
    ['Uvicorn running', /Uvicorn running on|Application startup complete/],
    ['warming up', /POST \/generate HTTP|End of prefill warmup/],
    ['fired up', /The server is fired up and ready to roll/],
  ),
  fatalPatterns: fatal(
    [
      {
        // srt/model_executor/model_runner.py init_memory_pool: "max_total_tokens=131072 is larger than the profiled
        // value -561981. Use the profiled value instead." (sglang#7691): the weights left less than nothing for the KV
        // cache. The server does not say so again: it goes on until something else fails (the #7691 launch only
        // "exited with code 1"). A draft worker prints the same for the pool it shares with the target once that one
        // is sized and captured, and serves on (SGLang's speculative-decoding docs notebook, EAGLE-2 with
        // torch.compile, run of 2026-02-11: "max_total_tokens=20480 is larger than the profiled value -89624").
        name: 'no KV cache memory',
        pattern: /is larger than the profiled value -\d+/,
        hint: 'the weights leave no GPU memory for the KV cache (SGLang profiled a negative budget): raise --mem-fraction-static, use more GPUs (--tp) or a smaller model, or lower --max-total-tokens / --context-length',
        notAfterPhases: ['allocating KV cache', 'capturing CUDA graphs', 'CUDA graphs captured'],
      },
      {
        // srt/entrypoints/engine.py _scheduler_died_error: "Rank 0 scheduler died during initialization (exit code:
        // -9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer."
        name: 'killed',
        pattern: /scheduler died during initialization \(exit code:? -9\)/,
        hint: 'a scheduler was SIGKILLed, most often by the host OOM killer: check `dmesg -T | grep -i oom` and host RAM',
      },
    ],
    [
      {
        // srt/managers/scheduler.py run_scheduler_process "Scheduler hit an exception: Traceback…": the scheduler's own
        // exception, which the parent's sigquit line often precedes (ktransformers#1969, in load_model).
        name: 'scheduler exception',
        pattern: /Scheduler hit an exception/,
        hint: 'a scheduler raised an exception: read the exception at the end of its Traceback in the log tail above',
      },
      {
        // The parent's sigquit handler "Received sigquit from a child process. It usually means the child failed."
        // (sglang#8864); "Rank 0 scheduler is dead" (sglang#15235); engine.py "Rank N scheduler died during
        // initialization" (sglang#25118).
        name: 'scheduler died',
        pattern: /Rank \d+ scheduler is dead|Received sigquit from a child process|scheduler died during initialization/,
        hint: 'a scheduler process crashed: read the first exception in the log tail above',
      },
    ],
  ),
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
    // launcher/src/main.rs "Starting check and download process for {model_id}" (TGI >= 2; "Starting download process" before).
    ['downloading weights', /Starting (check and )?download process|Download file:/],
    ['starting shards', /Starting shard/],
    ['waiting for shards', /Waiting for shard to be ready/],
    ['shards ready', /Shard ready in/],
    ['warming up', /Warming up model/],
    ['starting webserver', /Starting Webserver|Setting max batch total tokens/],
    ['connected', /^.*\bConnected\s*$/],
  ),
  fatalPatterns: fatal(
    [],
    [
      {
        name: 'shard failed',
        pattern: /Shard \d+ failed to start|Shard process was signaled|Error when initializing model/,
        hint: 'a model shard failed to start: read the shard error in the log tail above',
      },
    ],
  ),
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
  // Its streamed responses end with the connection closed though the headers say `Keep-Alive: timeout=5, max=100`
  // (curl on llama.cpp 80fb11a, the bundle of node-llama-cpp 3.21.1: "Connection 0 seems to be dead" after each streamed
  // completion, reused after a plain one); at c=4 on a CPU build 1 request in 40 raced the close and was resent.
  closesStreamedConnections: true,
  phasePatterns: phases(
    ['loading model', /loading model|llama_model_load|llama_model_loader: loaded meta data/],
    ['loading tensors', /load_tensors:/],
    ['creating context', /llama_context|llama_new_context_with_model|llama_kv_cache/],
    ['warming up', /warming up the model/],
    ['model loaded', /model loaded/],
    ['listening', /server is listening on|HTTP server is listening/],
  ),
  fatalPatterns: fatal([
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
  ]),
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
  // Models load on first request: llm/server.go "starting llama server" / "waiting for server to become available"
  // status="llm server loading model", then server.go:1388 msg="llama runner started in 9.99 seconds" (Ollama 2026).
  phasePatterns: phases(
    ['listening', /Listening on .*\(version/],
    ['inference compute found', /inference compute/],
    ['loading model', /msg="starting (llama|ollama) server"|msg="waiting for server to become available"|msg="waiting for llama runner to start responding"/],
    ['model loaded', /llama runner started in [\d.]+ seconds/],
  ),
  fatalPatterns: fatal(
    [],
    [
      {
        name: 'model runner failed',
        pattern: /llama runner process has terminated|error loading llama server/,
        hint: 'the model runner crashed: check GPU memory and the model blob (ollama pull)',
      },
    ],
  ),
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

import type { SimConfig } from './config.js';
import { CRASH_TRACEBACK, type StartupHooks } from './startup.js';

/**
 * The startup of today's engines, as their logs and sockets show it. Both load before their HTTP server exists, so
 * connections are refused while loading: vLLM builds its engine before it serves (vllm/entrypoints/openai/
 * api_server.py `build_async_engine_client`, then "Starting vLLM server on"); SGLang launches its scheduler
 * processes, then uvicorn, and answers /health 503 until its warm-up request finished (python/sglang/srt/entrypoints/
 * http_server.py: `server_status` Starting until `_wait_and_warmup`, "The server is fired up and ready to roll!").
 * Log lines follow vLLM 0.22 and SGLang 0.5.15 startups.
 */

const VLLM_VERSION = '0.22.1';

const pad = (value: number, width = 2): string => String(value).padStart(width, '0');

/** `(EngineCore pid=7) INFO 12-04 14:03:19 [default_loader.py:397] message`, as vLLM V1's processes prefix them. */
export function vllmLine(process: 'EngineCore' | 'APIServer', pid: number, level: 'INFO' | 'WARNING' | 'ERROR', source: string, message: string): string {
  const at = new Date();
  const stamp = `${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
  return `(${process} pid=${pid}) ${level} ${stamp} [${source}] ${message}`;
}

/** `[2026-12-04 14:03:19 TP0] message`: SGLang's scheduler processes name their rank, the HTTP server does not. */
export function sglangLine(message: string, rank: string | undefined = 'TP0'): string {
  const at = new Date();
  const stamp = `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
  return `[${stamp}${rank ? ` ${rank}` : ''}] ${message}`;
}

/** One moment of a startup: at `share` of loadMs, log `lines`; `listen` opens the port; `ready` ends the startup. */
interface Step {
  share: number;
  lines: (seconds: (fromShare: number, toShare: number) => string) => string[];
  listen?: true;
  ready?: true;
}

interface Script {
  steps: Step[];
  /** Lines of a failure that ends the process during loading (crash or OOM) or once serving (crash). */
  fatal(kind: 'crash' | 'oom'): string[];
  /** A failure after ready that kills the engine but leaves the HTTP server answering (vLLM's EngineDeadError). */
  engineDead?: () => string[];
}

function vllmScript(config: SimConfig, url: string, pid: number): Script {
  const engine = (source: string, message: string): string => vllmLine('EngineCore', pid, 'INFO', source, message);
  const api = (source: string, message: string): string => vllmLine('APIServer', pid, 'INFO', source, message);
  const k = config.decode.spec.draftTokens;
  const spec = k > 0 ? `{'method': 'eagle3', 'num_spec_tokens': ${k}}` : 'None';
  return {
    steps: [
      { share: 0, lines: () => [api('api_server.py:1885', `vLLM API server version ${VLLM_VERSION}`)] },
      {
        share: 0.02,
        lines: () => [
          engine(
            'core.py:93',
            `Initializing a V1 LLM engine (v${VLLM_VERSION}) with config: model='${config.model}', speculative_config=${spec}, max_seq_len=${config.decode.maxModelLen}`,
          ),
        ],
      },
      { share: 0.05, lines: () => [engine('gpu_model_runner.py:5037', `Starting to load model ${config.model}...`)] },
      { share: 0.06, lines: () => ['Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]'] },
      {
        share: 0.3,
        lines: (s) => [
          `Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:${pad(Math.min(59, Math.round(Number(s(0.06, 0.3)))))}<00:00,  1.52s/it]`,
          engine('default_loader.py:397', `Loading weights took ${s(0.05, 0.3)} seconds`),
          engine('gpu_model_runner.py:5132', `Model loading took 15.18 GiB memory and ${s(0.05, 0.3)} seconds`),
        ],
      },
      {
        share: 0.4,
        lines: (s) => [
          engine('backends.py:1089', "Using cache directory: /root/.cache/vllm/torch_compile_cache/b172ae6487/rank_0_0/backbone for vLLM's torch.compile"),
          engine('backends.py:1148', `Dynamo bytecode transform time: ${s(0.3, 0.4)} s`),
        ],
      },
      {
        share: 0.65,
        lines: (s) => [
          engine('backends.py:393', `Compiling a graph for compile range (1, 2048) takes ${s(0.4, 0.65)} s`),
          engine('monitor.py:53', `torch.compile took ${s(0.3, 0.65)} s in total`),
        ],
      },
      {
        share: 0.7,
        lines: (s) => [
          engine('monitor.py:81', `Initial profiling/warmup run took ${s(0.65, 0.7)} s`),
          engine('gpu_worker.py:466', 'Available KV cache memory: 61.20 GiB'),
          engine('kv_cache_utils.py:1733', 'GPU KV cache size: 501,344 tokens'),
        ],
      },
      { share: 0.72, lines: () => ['Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 51/51 [00:02<00:00, 20.01it/s]'] },
      {
        share: 0.95,
        lines: (s) => [
          'Capturing CUDA graphs (decode, FULL): 100%|██████████| 35/35 [00:03<00:00,  9.34it/s]',
          engine('gpu_model_runner.py:6456', `Graph capturing finished in ${Math.max(1, Math.round(Number(s(0.72, 0.95))))} secs, took 0.71 GiB`),
          engine('core.py:302', `init engine (profile, create kv cache, warmup model) took ${s(0.3, 0.95)} s (compilation: ${s(0.3, 0.65)} s)`),
        ],
      },
      {
        share: 1,
        listen: true,
        ready: true,
        lines: () => [
          api('api_server.py:592', "Supported tasks: ['generate']"),
          api('api_server.py:596', `Starting vLLM server on ${url}`),
          api('launcher.py:37', 'Available routes are:'),
          ...['/health, Methods: GET', '/metrics, Methods: GET', '/v1/models, Methods: GET', '/v1/completions, Methods: POST'].map((route) =>
            api('launcher.py:46', `Route: ${route}`),
          ),
          `(APIServer pid=${pid}) INFO:     Started server process [${pid}]`,
          `(APIServer pid=${pid}) INFO:     Waiting for application startup.`,
          `(APIServer pid=${pid}) INFO:     Application startup complete.`,
        ],
      },
    ],
    fatal: (kind) => [
      vllmLine('EngineCore', pid, 'ERROR', 'core.py:1012', 'EngineCore failed to start.'),
      ...(kind === 'oom'
        ? [
            'Traceback (most recent call last):',
            '  File "/usr/local/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", line 4388, in profile_run',
            '    hidden_states, last_hidden_states = self._dummy_run(self.max_num_tokens, is_profile=True)',
            'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free.',
          ]
        : CRASH_TRACEBACK),
    ],
    // vllm/v1/engine/async_llm.py `output_handler`: the engine core died; requests and /health see EngineDeadError.
    engineDead: () => [
      vllmLine('EngineCore', pid, 'ERROR', 'core.py:1012', 'EngineCore encountered a fatal error.'),
      'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. (servelab simulated engine death)',
      vllmLine('APIServer', pid, 'ERROR', 'async_llm.py:525', 'AsyncLLM output_handler failed.'),
      'vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.',
    ],
  };
}

/**
 * server_args as SGLang logs them (the speculative fields with spec on; EAGLE's draft tokens count the tree's root),
 * then its warning when the topk-1 chain rule replaced the draft tokens asked for (python/sglang/srt/server_args.py
 * `_handle_speculative_decoding`).
 */
function sglangArgsLines(config: SimConfig, port: string): string[] {
  const { spec } = config.decode;
  const on = spec.draftTokens > 0;
  const speculative = on
    ? `speculative_algorithm='${config.sglang.speculativeAlgorithm ?? 'EAGLE3'}', speculative_num_steps=${spec.steps ?? spec.draftTokens}, ` +
      `speculative_eagle_topk=${spec.topk}, speculative_num_draft_tokens=${spec.draftTokens + 1}`
    : 'speculative_algorithm=None, speculative_num_draft_tokens=None';
  const args = sglangLine(
    `server_args=ServerArgs(model_path='${config.model}', port=${port}, tp_size=${config.sglang.tpSize}, ${speculative}, ` +
      `incremental_streaming_output=${config.sglang.incrementalStreamingOutput ? 'True' : 'False'})`,
    undefined,
  );
  const adjusted =
    spec.requestedDraftTokens === undefined
      ? []
      : [sglangLine('speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1', undefined)];
  return [...adjusted, args];
}

/** One line per tensor-parallel rank (TP0, TP1, …), as each scheduler process logs its own. */
function perRank(config: SimConfig, message: string): string[] {
  return Array.from({ length: config.sglang.tpSize }, (_, rank) => sglangLine(message, `TP${rank}`));
}

function sglangScript(config: SimConfig, url: string, pid: number): Script {
  const batchSizes = [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256].filter((bs) => bs <= config.decode.maxBatch);
  const port = new URL(url).port;
  return {
    steps: [
      { share: 0, lines: () => sglangArgsLines(config, port) },
      {
        share: 0.03,
        lines: () => [...perRank(config, 'Init torch distributed begin.'), ...perRank(config, 'Init torch distributed ends. mem usage=0.00 GB')],
      },
      { share: 0.05, lines: () => perRank(config, 'Load weight begin. avail mem=78.50 GB') },
      {
        share: 0.4,
        lines: () => perRank(config, 'Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.42 GB, mem usage=15.08 GB.'),
      },
      {
        share: 0.45,
        lines: () => [
          sglangLine('KV Cache is allocated. dtype: torch.bfloat16, #tokens: 412000, K size: 25.10 GB, V size: 25.10 GB'),
          sglangLine('Memory pool end. avail mem=12.31 GB'),
        ],
      },
      {
        share: 0.5,
        lines: () => [
          sglangLine(`Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[${batchSizes.join(', ')}], avail mem=12.10 GB`),
          `Capturing batches (bs=${batchSizes.at(-1)} avail_mem=12.05 GB):   5%|▌         | 1/${batchSizes.length} [00:00<00:05,  3.50it/s]`,
        ],
      },
      {
        share: 0.85,
        lines: (s) => [
          `Capturing batches (bs=1 avail_mem=11.36 GB): 100%|██████████| ${batchSizes.length}/${batchSizes.length} [00:05<00:00,  6.52it/s]`,
          sglangLine(`Capture target decode CUDA graph end. elapsed=${s(0.5, 0.85)} s, mem usage=0.76 GB, avail mem=11.34 GB.`),
          sglangLine(
            `max_total_num_tokens=412000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=${config.decode.maxBatch}, ` +
              `context_len=${config.decode.maxModelLen}, available_gpu_mem=11.34 GB`,
          ),
        ],
      },
      {
        share: 0.9,
        listen: true,
        lines: () => [
          sglangLine(`INFO:     Started server process [${pid}]`, undefined),
          sglangLine('INFO:     Waiting for application startup.', undefined),
          sglangLine('INFO:     Application startup complete.', undefined),
          sglangLine(`INFO:     Uvicorn running on ${url} (Press CTRL+C to quit)`, undefined),
        ],
      },
      {
        share: 0.93,
        lines: () => [
          sglangLine('INFO:     127.0.0.1:50318 - "GET /model_info HTTP/1.1" 200 OK', undefined),
          sglangLine('Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, '),
        ],
      },
      {
        share: 1,
        ready: true,
        lines: () => [
          sglangLine('INFO:     127.0.0.1:50330 - "POST /generate HTTP/1.1" 200 OK', undefined),
          sglangLine('The server is fired up and ready to roll!', undefined),
        ],
      },
    ],
    // python/sglang/srt/managers/scheduler.py `run_scheduler_process`: the exception, then the launcher's SIGQUIT.
    fatal: (kind) => [
      sglangLine('Scheduler hit an exception: Traceback (most recent call last):'),
      '  File "/usr/local/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 3135, in run_scheduler_process',
      '    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)',
      kind === 'oom'
        ? 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free.'
        : 'RuntimeError: servelab simulated scheduler crash',
      sglangLine('Received sigquit from a child process. It usually means the child failed.', undefined),
    ],
  };
}

export interface EngineStartupHooks extends StartupHooks {
  /** Open the port (the engine refused connections until now); rejects when it cannot. */
  listen(): Promise<void>;
}

/**
 * Play a vLLM or SGLang startup over loadMs, with the configured failure at failure.atMs. During loading, a crash
 * or OOM ends the process (both engines exit when their engine process dies before serving); once serving, vLLM's
 * engine death leaves the API server up answering 503 (`oom`), SGLang's takes the whole server down.
 * Returns a function that cancels whatever has not happened yet.
 */
export function runEngineStartup(config: SimConfig & { engine: 'vllm' | 'sglang' }, url: string, pid: number, hooks: EngineStartupHooks): () => void {
  const { loadMs, failure } = config.startup;
  const script = config.engine === 'vllm' ? vllmScript(config, url, pid) : sglangScript(config, url, pid);
  const timers: NodeJS.Timeout[] = [];
  let ended = false;
  const cancel = (): void => {
    ended = true;
    for (const timer of timers) clearTimeout(timer);
  };
  const seconds = (fromShare: number, toShare: number): string => ((loadMs * (toShare - fromShare)) / 1000).toFixed(2);

  const banner = `servelab simulator (${config.engine} personality) will listen on ${url}; loading for ${(loadMs / 1000).toFixed(2)} s`;
  hooks.log(config.engine === 'vllm' ? vllmLine('APIServer', pid, 'INFO', 'sim', banner) : sglangLine(banner, undefined));

  if (failure.kind !== 'none' && failure.kind !== 'not-serving' && failure.afterRequests === undefined) {
    const kind = failure.kind;
    const strikeAt = failure.atMs ?? loadMs / 2;
    // Armed before the steps: a failure due exactly at loadMs still beats readiness.
    timers.push(
      setTimeout(() => {
        const serving = strikeAt > loadMs;
        if (!serving) cancel();
        ended = true;
        if (kind === 'hang') return hooks.setState('hung');
        if (kind === 'oom' && serving && script.engineDead) {
          for (const line of script.engineDead()) hooks.log(line);
          return hooks.setState('oom');
        }
        for (const line of script.fatal(kind)) hooks.log(line);
        hooks.setState('crashed');
      }, strikeAt),
    );
  }
  for (const step of script.steps) {
    timers.push(
      setTimeout(() => {
        if (ended) return;
        const log = (): void => {
          for (const line of step.lines(seconds)) hooks.log(line);
        };
        if (!step.listen) {
          if (step.ready) hooks.setState(failure.kind === 'not-serving' ? 'not-serving' : 'ready');
          return log();
        }
        // The port opens first, then readiness, then the lines: whoever acts on a line must find the server serving.
        hooks.listen().then(
          () => {
            if (ended) return;
            if (step.ready) hooks.setState(failure.kind === 'not-serving' ? 'not-serving' : 'ready');
            log();
          },
          (error: unknown) => {
            hooks.log(`ERROR: cannot listen on ${url}: ${String(error)}`);
            hooks.setState('crashed');
          },
        );
      }, loadMs * step.share),
    );
  }
  return cancel;
}

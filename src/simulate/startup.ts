import type { SimConfig } from './config.js';

/** What the simulated server is doing; decides how /health, /v1/models and generation answer. */
export type ServerState = 'loading' | 'ready' | 'not-serving' | 'oom' | 'hung' | 'crashed';

export interface StartupHooks {
  log(line: string): void;
  setState(state: ServerState): void;
}

const pad = (value: number): string => String(value).padStart(2, '0');

/** vLLM's log prefix: `INFO 12-02 14:03:19 [file.py:123] message`. */
export function vllmLogLine(level: 'INFO' | 'WARNING' | 'ERROR', source: string, message: string, at = new Date()): string {
  const stamp = `${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
  return `${level} ${stamp} [${source}] ${message}`;
}

export const CRASH_TRACEBACK = [
  'Traceback (most recent call last):',
  '  File "/usr/local/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 519, in run_engine_core',
  '    engine_core = EngineCoreProc(*args, **kwargs)',
  '  File "/usr/local/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 394, in __init__',
  '    super().__init__(vllm_config, executor_class, log_stats)',
  'RuntimeError: Engine core initialization failed. See root cause above. (servelab simulated crash)',
];

export const OOM_TRACEBACK = [
  'Traceback (most recent call last):',
  '  File "/usr/local/lib/python3.12/site-packages/vllm/worker/model_runner.py", line 1204, in profile_run',
  '    self.execute_model(model_input, kv_caches, intermediate_tensors)',
  'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB ' +
    'of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.12 GiB memory in use. ' +
    'Of the allocated memory 76.50 GiB is allocated by PyTorch, and 512.00 MiB is reserved by PyTorch but unallocated.',
];

/** Lines uvicorn prints once the app serves; the last one is what log watchers wait for. */
export function readyLines(url: string, pid: number): string[] {
  return [
    `INFO:     Started server process [${pid}]`,
    'INFO:     Waiting for application startup.',
    'INFO:     Application startup complete.',
    `INFO:     Uvicorn running on ${url} (Press CTRL+C to quit)`,
  ];
}

/**
 * Play the startup: phases at their share of loadMs, then ready (or not-serving), with the configured failure
 * striking at failure.atMs (if that is after loadMs, the failure hits a server that was already ready).
 * Returns a function that cancels whatever has not happened yet.
 */
export function runStartup(config: SimConfig, url: string, pid: number, hooks: StartupHooks): () => void {
  const { loadMs, phases, failure } = config.startup;
  const timers: NodeJS.Timeout[] = [];
  const at = (ms: number, action: () => void): void => {
    timers.push(setTimeout(action, ms));
  };
  const cancel = (): void => timers.forEach((timer) => clearTimeout(timer));
  const info = (message: string): void => hooks.log(vllmLogLine('INFO', 'sim', message));

  info(`vLLM API server version 0.0.0 (servelab simulator), model=${config.model}`);
  info(`servelab simulator listening on ${url}; loading for ${(loadMs / 1000).toFixed(2)} s`);

  if (failure.kind !== 'none' && failure.kind !== 'not-serving' && failure.afterRequests === undefined) {
    const kind = failure.kind;
    const strikeAt = failure.atMs ?? loadMs / 2;
    // Armed before the phase timers: timers due at the same ms fire in creation order, so a failure due exactly
    // at loadMs still beats readiness.
    at(strikeAt, () => {
      if (strikeAt <= loadMs) cancel();
      strike(kind, hooks);
    });
  }
  const totalShare = phases.reduce((sum, phase) => sum + phase.share, 0);
  let offset = 0;
  for (const phase of phases) {
    const duration = (loadMs * phase.share) / totalShare;
    const fill = (template: string): string => template.replaceAll('{model}', config.model).replaceAll('{s}', (duration / 1000).toFixed(2));
    at(offset, () => info(fill(phase.start)));
    const end = phase.end;
    if (end) at(offset + duration, () => info(fill(end)));
    offset += duration;
  }
  at(loadMs, () => {
    // State first: whoever acts on the Uvicorn line must find the server serving.
    hooks.setState(failure.kind === 'not-serving' ? 'not-serving' : 'ready');
    for (const line of readyLines(url, pid)) hooks.log(line);
  });
  return cancel;
}

function strike(kind: 'crash' | 'oom' | 'hang', hooks: StartupHooks): void {
  if (kind === 'crash') {
    hooks.log(vllmLogLine('ERROR', 'core.py:527', 'EngineCore failed to start.'));
    for (const line of CRASH_TRACEBACK) hooks.log(line);
    hooks.setState('crashed');
  } else if (kind === 'oom') {
    hooks.log(vllmLogLine('ERROR', 'core.py:527', 'EngineCore hit an exception.'));
    for (const line of OOM_TRACEBACK) hooks.log(line);
    hooks.setState('oom');
  } else {
    hooks.setState('hung');
  }
}

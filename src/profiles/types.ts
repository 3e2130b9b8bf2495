/** What servelab knows about one kind of inference server: where to ask if it is up and how to read its log. */
export interface LogPattern {
  /** Short label shown to the user, e.g. "loading weights" or "CUDA out of memory". */
  name: string;
  pattern: RegExp;
}

export interface FatalPattern extends LogPattern {
  /** Next step to print when this pattern ends a launch. */
  hint: string;
  /**
   * Startup phases after which the line is no longer fatal: the same words then come from a part that survives them
   * (SGLang's draft worker prints the negative KV budget of a pool it shares with the target, which is sized already).
   */
  notAfterPhases?: readonly string[];
}

/** The wire formats the load client speaks: the one list that profiles, files and the load client's table follow. */
export const BACKEND_KINDS = ['openai-completions', 'openai-chat', 'sglang', 'tgi', 'llamacpp'] as const;
export type BackendKind = (typeof BACKEND_KINDS)[number];

export interface ServerProfile {
  name: string;
  /** Path polled for liveness; a 200 with no JSON `status`, or JSON status "ok"/"healthy"/"ready", counts as healthy. */
  healthPath: string;
  /** OpenAI-compatible servers get a /v1/models + tiny-generation check before being called ready. */
  openaiCompatible: boolean;
  modelsPath: string;
  /** Prometheus endpoint, if the server has one (used for speculative-decoding counters). */
  metricsPath?: string;
  /** Backend that `servelab bench` uses by default against this server. */
  defaultBackend: BackendKind;
  /** Engine versions the log patterns were checked against, e.g. "sglang 0.5.15" (see versionNote). */
  checkedVersions?: string;
  /** Log lines that mark startup phases, in the order they normally appear. */
  phasePatterns: LogPattern[];
  /** Log lines that mean the server will never become ready. */
  fatalPatterns: FatalPattern[];
  /** Port the server listens on when the command names none (used by `launch` when argv has no `{port}`). */
  defaultPort?: number;
  /**
   * How the server's prefix/prompt cache can be bypassed for a cold trial (`client.cache: reset`): an endpoint that
   * empties it (POST), or a request field that turns it off per request (llama.cpp's `cache_prompt: false`).
   */
  cacheReset?: { kind: 'endpoint'; path: string } | { kind: 'cache-prompt-off' };
  /**
   * The server closes a connection after each streamed response while advertising keep-alive: the load client then
   * sends every request on a connection of its own, so none races the close (and needs a resend).
   */
  closesStreamedConnections?: true;
  /** A 200 health response whose body is plain text counts as healthy only if it matches this (e.g. Ollama's "Ollama is running"). */
  healthTextPattern?: RegExp;
  /** Deadline of one health probe (default 2 s): a server whose health check does work (SGLang generates a token) needs longer. */
  healthProbeTimeoutMs?: number;
  /**
   * What a 503 from the health path means: `starting` (default: keep waiting) or `dead` (the server is up but its
   * engine died and will not recover, as vLLM's /health answers only then): waiting on would only burn the timeout.
   */
  healthUnavailable?: 'starting' | 'dead';
  /**
   * Path probed while a trial runs, where any answer proves the process serves (default: healthPath). A health
   * check that does work (SGLang's takes 1 s at least) would look like a hung server to a 1 s liveness probe.
   */
  livenessPath?: string;
  /**
   * GET paths whose answer needs the engine's scheduler, newest name first (older names after it, for older
   * versions), asked every few seconds during a trial: an HTTP server that answers `livenessPath` can outlive a dead
   * scheduler (SGLang).
   */
  schedulerPaths?: readonly string[];
  /**
   * A typical time to ready, which a plan without history shows as "typical for <profile>, no history": a rough
   * figure for a mid-size model, never a measurement of yours. Unset: the plan says the startup is unknown.
   */
  typicalStartupMs?: number;
}

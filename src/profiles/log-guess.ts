/**
 * Which built-in profile wrote a log, from marks only that engine prints (`servelab log` without --profile).
 * Each mark found counts once; the engine with the most marks wins, none found means the generic 'openai'.
 */
const MARKS: Array<[string, RegExp[]]> = [
  // vLLM's logger format: "INFO 03-21 20:15:44 [monitor.py:33] …" (older: no brackets).
  [
    'vllm',
    [
      /\b(INFO|WARNING|ERROR|DEBUG) \d{2}-\d{2} \d{2}:\d{2}:\d{2} \[?\w+\.py:\d+\]/,
      /\(EngineCore(_DP\d+)? pid=\d+\)|\(APIServer pid=\d+\)/,
      /vLLM (API )?server version|Starting vLLM/,
      /\[(gpu_model_runner|kv_cache_utils|gpu_worker|api_server)\.py:\d+\]/,
      /vllm\/(v1|entrypoints|worker)\//,
    ],
  ],
  [
    'sglang',
    [
      /Scheduler hit an exception|Received sigquit from a child process/,
      /The server is fired up and ready to roll/,
      /Load weight (begin|end)|Capture .*(cuda|CUDA) graph|Capturing batches \(bs=/,
      /sglang\/srt\//,
      /scheduler died during initialization|scheduler is dead/,
    ],
  ],
  ['tgi', [/text_generation_launcher|text_generation_router|text-generation-launcher/]],
  ['llamacpp', [/llama_model_loader|llama_context|load_tensors:|llama-server|server is listening on/]],
  ['ollama', [/msg="inference compute"|ollama|Listening on .*\(version/]],
];

export function guessProfileName(lines: readonly string[]): string {
  let best = 'openai';
  let bestScore = 0;
  for (const [name, marks] of MARKS) {
    const score = marks.filter((mark) => lines.some((line) => mark.test(line))).length;
    if (score > bestScore) [best, bestScore] = [name, score];
  }
  return best;
}

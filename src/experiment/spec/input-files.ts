import { lineOfKey } from '../../config/load.js';
import { checkDatasetSync } from '../../load/datasets/load.js';
import { readTrace } from '../../load/trace/parse.js';
import { windowed } from '../../load/trace/prompts.js';
import { isUserError, UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import type { ResolvedVariant, ResolvedWorkload } from './types.js';

/**
 * Every trace and dataset a variant's client reads, checked as the experiment file loads: each record's fields,
 * lengths within the variant's `client.contextTokens` (else servelab's cap), timestamps, a trace window that holds
 * the requests a trace workload asks for. Found only after a server loaded its model, any of these costs the startup
 * (and a 10^9-token trace line exhausted the runner's memory). A file is read once per settings that change the check.
 * `promptsKey` names the file's key for each variant; an error keeps the reader's location (file:line) and hint.
 */
export function checkInputFiles(
  filePath: string,
  variants: ReadonlyArray<{ variant: ResolvedVariant; promptsKey: string }>,
  workloads: ReadonlyArray<{ workload: ResolvedWorkload; promptsKey: string }>,
): void {
  // A trace workload's own trace, with each variant's context limit: it holds the requests the workload asks for.
  const sources = [
    ...variants.map(({ variant, promptsKey }) => ({ prompts: variant.client.prompts, replays: [], promptsKey, contextTokens: variant.client.contextTokens })),
    ...workloads.flatMap(({ workload, promptsKey }) =>
      workload.prompts
        ? variants.map(({ variant }) => ({ prompts: workload.prompts!, replays: [workload], promptsKey, contextTokens: variant.client.contextTokens }))
        : [],
    ),
  ];
  const checked = new Set<string>();
  for (const { prompts, replays, promptsKey, contextTokens } of sources) {
    const identity = JSON.stringify([prompts, contextTokens, replays.map((workload) => workload.label)]);
    if (checked.has(identity)) continue;
    checked.add(identity);
    try {
      if (prompts.kind === 'trace') checkTrace(prompts, contextTokens, replays);
      else if (prompts.kind === 'sharegpt' || prompts.kind === 'jsonl' || prompts.kind === 'csv' || prompts.kind === 'parquet')
        checkDatasetSync(prompts, { chat: false, ...(contextTokens !== undefined && { contextTokens }) });
    } catch (error) {
      if (!isUserError(error)) throw error;
      const line = lineOfKey(filePath, promptsKey);
      throw new UserError(`${filePath}${line ? `:${line}` : ''}: ${promptsKey}: ${error.message}`, error.hint, ExitCode.usage);
    }
  }
}

function checkTrace(
  prompts: Extract<ResolvedVariant['client']['prompts'], { kind: 'trace' }>,
  contextTokens: number | undefined,
  replays: readonly ResolvedWorkload[],
): void {
  const records = windowed(readTrace(prompts.path, prompts.format, { ...prompts, ...(contextTokens !== undefined && { contextTokens }) }), prompts.window);
  const where = prompts.window ? ' in the window' : '';
  if (records.length === 0)
    throw new UserError(
      `trace ${prompts.path} holds no requests${where}`,
      prompts.window ? 'widen the window or leave it out' : 'check the file and its format',
    );
  for (const { label, workload } of replays) {
    if (workload.kind === 'trace' && workload.requests !== undefined && workload.requests > records.length)
      throw new UserError(
        `${prompts.path} holds ${records.length} requests${where}, fewer than the ${workload.requests} workload "${label}" asks for`,
        'ask for fewer requests, or widen the window',
      );
  }
}

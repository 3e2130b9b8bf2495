/**
 * A search's per-level best speculative depth as a schedule the engine takes (issue 35 item 3), pure. Each load
 * level with a fixed batch (single-stream = 1, `concurrency: c` = c) contributes its best config's depth, read from
 * the flags that config ran with, so it is the engine's own setting and not a knob name:
 *
 * - vLLM `num_speculative_tokens_per_batch_size` (vllm-project/vllm#32374): a list of inclusive
 *   `[batch_lo, batch_hi, K]` ranges, the first starting at 1, sorted and non-overlapping
 *   (vllm/v1/spec_decode/dynamic/utils.py:26 `validate_and_normalize_dynamic_sd_schedule`, commit 14b450c); batch
 *   sizes past the last range keep its K, and each K is capped by `num_speculative_tokens`, the startup maximum
 *   (same file, `build_dynamic_sd_schedule_lookup`). Both are keys of `--speculative-config`
 *   (vllm/config/speculative.py `SpeculativeConfig.num_speculative_tokens_per_batch_size`, commit 002e77c). The
 *   depth is K: `num_speculative_tokens` in `--speculative-config`, the older `--num-speculative-tokens`, or the
 *   simulator's `--spec-draft-tokens` (the same K).
 * - SGLang `--speculative-adaptive --speculative-adaptive-config FILE` (python/sglang/srt/speculative/
 *   adaptive_spec_params.py `_load_adaptive_config`, commit 015c872): a JSON object whose digit keys are the lowest
 *   batch size of a slot, each `{"candidate_steps": [...]}`; one candidate fixes the slot's `speculative_num_steps`.
 *   Adaptive mode runs EAGLE/EAGLE3 with topk 1 only (`adaptive_unsupported_reason`, same file), so a best config
 *   with another topk gets no file. The depth is `--speculative-num-steps`.
 *
 * A level's batch range runs to the geometric middle between its batch size and the next level's: on a log scale
 * each batch size takes the depth of the nearest measured level.
 */
import type { StoredSearchStep } from '../../store/search.js';
import type { ResolvedExperiment, ResolvedVariant } from '../spec/types.js';
import { searchRunOf } from './search.js';

export type ScheduleEngine = 'vllm' | 'sglang';

export interface LevelDepth {
  level: string;
  batchSize: number;
  /** The level's best config (the tie-break's preferred one within the tolerance). */
  variant: string;
  depth: number;
}

export interface SpeculativeSchedule {
  engine: ScheduleEngine;
  /** The engine's setting that varies by batch size. */
  setting: string;
  levels: LevelDepth[];
  /** Inclusive batch ranges with their depth, in batch order. */
  ranges: Array<[number, number, number]>;
  /** The file's content, as the engine reads it. */
  content: Record<string, unknown>;
  /** How to pass the file to the engine. */
  usage: string;
}

/** Why a search with several levels gets no schedule file; undefined when one is written or none applies. */
export type ScheduleResult = { schedule: SpeculativeSchedule } | { none: string } | undefined;

/** The value of `--flag v` or `--flag=v` in a command. */
function flagValue(command: readonly string[], flag: string): string | undefined {
  const index = command.findIndex((arg) => arg === flag || arg.startsWith(`${flag}=`));
  if (index < 0) return undefined;
  const arg = command[index]!;
  return arg === flag ? command[index + 1] : arg.slice(flag.length + 1);
}

function vllmSpeculativeConfig(command: readonly string[]): Record<string, unknown> | undefined {
  const json = flagValue(command, '--speculative-config');
  if (json === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(json);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A config's speculative depth as the engine's flags set it; undefined when they set none. */
function depthOf(engine: ScheduleEngine, command: readonly string[]): number | undefined {
  const raw =
    engine === 'vllm'
      ? (vllmSpeculativeConfig(command)?.num_speculative_tokens ?? flagValue(command, '--num-speculative-tokens') ?? flagValue(command, '--spec-draft-tokens'))
      : flagValue(command, '--speculative-num-steps');
  const depth = Number(raw);
  return raw !== undefined && Number.isInteger(depth) && depth >= 0 ? depth : undefined;
}

/** Inclusive ranges from sorted distinct batch sizes: 1 up to the geometric middle to the next level, and so on. */
function batchRanges(levels: readonly LevelDepth[]): Array<[number, number, number]> {
  return levels.map((level, index) => {
    const next = levels[index + 1];
    const low = index === 0 ? 1 : Math.floor(Math.sqrt(levels[index - 1]!.batchSize * level.batchSize)) + 1;
    const high = next ? Math.floor(Math.sqrt(level.batchSize * next.batchSize)) : level.batchSize;
    return [low, high, level.depth];
  });
}

/**
 * The schedule of a search's current per-level bests (its final ones once it ended); `none` says why a search with
 * two or more batch levels on vLLM or SGLang gets no file; undefined: the run is not such a search.
 */
export function speculativeSchedule(experiment: ResolvedExperiment, steps: readonly StoredSearchStep[]): ScheduleResult {
  const run = searchRunOf(experiment);
  const engine = experiment.variants[0]?.server.profile;
  if (!run || (engine !== 'vllm' && engine !== 'sglang')) return undefined;
  const leaders = (steps.at(-1)?.leaders ?? []).filter((leader) => leader.level !== '*');
  const variants = new Map(experiment.variants.map((variant) => [variant.name, variant]));
  const levels: LevelDepth[] = [];
  const bests: ResolvedVariant[] = [];
  for (const leader of leaders) {
    const workload = experiment.workloads.find((candidate) => candidate.label === leader.level);
    const batchSize = workload?.workload.kind === 'single-stream' ? 1 : workload?.workload.kind === 'concurrency' ? workload.workload.concurrency : undefined;
    const variant = variants.get(run.variantOf.get(leader.preferred ?? leader.point) ?? '');
    if (batchSize === undefined || !variant) continue;
    const depth = depthOf(engine, variant.server.command);
    if (depth === undefined)
      return { none: `${variant.name} (best at ${leader.level}) sets no ${engine === 'vllm' ? 'num_speculative_tokens' : '--speculative-num-steps'}` };
    levels.push({ level: leader.level, batchSize, variant: variant.name, depth });
    bests.push(variant);
  }
  levels.sort((a, b) => a.batchSize - b.batchSize);
  if (levels.length < 2) return undefined;
  if (new Set(levels.map((level) => level.batchSize)).size < levels.length) return { none: 'two load levels have the same batch size' };
  const ranges = batchRanges(levels);
  if (engine === 'vllm') {
    const base = vllmSpeculativeConfig(bests[0]!.server.command) ?? {};
    return {
      schedule: {
        engine,
        setting: 'num_speculative_tokens_per_batch_size',
        levels,
        ranges,
        content: { ...base, num_speculative_tokens: Math.max(...levels.map((level) => level.depth)), num_speculative_tokens_per_batch_size: ranges },
        usage: 'vLLM: `--speculative-config "$(cat FILE)"` (add the method and model if they are not in it)',
      },
    };
  }
  const topk = bests.map((variant) => flagValue(variant.server.command, '--speculative-eagle-topk')).find((value) => value !== undefined && value !== '1');
  if (topk !== undefined) return { none: `SGLang's adaptive speculative config runs with --speculative-eagle-topk 1 only, and a level's best has ${topk}` };
  return {
    schedule: {
      engine,
      setting: 'speculative_num_steps per batch size',
      levels,
      ranges,
      content: Object.fromEntries(ranges.map(([low, , depth]) => [String(low), { candidate_steps: [depth] }])),
      usage: 'SGLang: `--speculative-adaptive --speculative-adaptive-config FILE` (EAGLE/EAGLE3, --speculative-eagle-topk 1)',
    },
  };
}

/** The file `servelab report` writes next to run-<id>.html. */
export function scheduleFileName(runId: number, engine: ScheduleEngine): string {
  return engine === 'vllm' ? `run-${runId}.vllm-speculative-config.json` : `run-${runId}.sglang-adaptive-spec.json`;
}

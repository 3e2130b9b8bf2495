import type { StoredSearchStep } from '../../store/search.js';
import type { TrialRecord } from '../../store/types.js';
import { leaderText, searchObjective, searchRunOf, searchStanding } from '../analysis/search.js';
import { type ScheduleResult, scheduleFileName } from '../analysis/spec-schedule.js';
import type { ResolvedExperiment } from '../spec/types.js';

/**
 * Where a search stands or how it ended, for the run's final text and `show`: the best config with its tolerance
 * ("… within 2% of the best of 215 points, 37 measured"), the best per level, what is still unresolved. With a
 * tie-break, the best is its preferred point among those within the tolerance of the leader.
 */
export function formatSearchSummary(experiment: ResolvedExperiment, steps: readonly StoredSearchStep[], trials: readonly TrialRecord[]): string {
  const run = searchRunOf(experiment)!;
  const standing = searchStanding(run, steps, trials);
  const { metric } = searchObjective(experiment);
  const name = (point: string): string => run.variantOf.get(point) ?? point;
  const tolerance = shareText(run.search.tolerance);
  const resolved = standing.done?.resolved ?? false;
  const of = `of ${standing.points} points${standing.points < standing.combinations ? ` (${standing.combinations} combinations, the rest breaking a constraint)` : ''}, ${standing.measured} measured in ${standing.blocks} block${standing.blocks === 1 ? '' : 's'}`;
  const lines = [standing.done ? `search: ${standing.done.reason}` : `search: not finished (${steps.length} block${steps.length === 1 ? '' : 's'} decided)`];
  const best = (leader: StoredSearchStep['leaders'][number]): string => name(leader.preferred ?? leader.point);
  const across = standing.leaders.find((leader) => leader.level === '*');
  const perLevel = standing.leaders.filter((leader) => leader.level !== '*');
  if (across) {
    lines.push(
      resolved
        ? `best config across levels: ${best(across)}, within ${tolerance} of the best ${of} (${shareText(run.search.confidence)} confidence)`
        : `best config so far across levels: ${best(across)}, the leader ${of}; not resolved`,
    );
  } else lines.push(`${standing.points} points, ${standing.measured} measured`);
  if (perLevel.length > 0) {
    lines.push(resolved ? `best per level (each within ${tolerance} of that level's best):` : 'best per level so far:');
    for (const leader of perLevel) lines.push(`  ${leaderText(run, leader, metric)}`);
  }
  lines.push(`${standing.out} point${standing.out === 1 ? '' : 's'} out or settled; ${standing.alive} still racing when it ended`);
  if (standing.done && standing.done.unresolved.length > 0) lines.push('unresolved:', ...standing.done.unresolved.map((line) => `  ${line}`));
  return lines.join('\n');
}

/** The engine schedule of the per-level bests (analysis/spec-schedule.ts), and the file `servelab report` writes. */
export function formatSpecSchedule(result: ScheduleResult, runId: number): string[] {
  if (!result) return [];
  if ('none' in result) return [`engine schedule: none written (${result.none})`];
  const { schedule } = result;
  const per = schedule.levels.map((level) => `${level.level} → ${level.depth} (${level.variant})`).join(', ');
  return [
    `engine schedule (${schedule.engine === 'vllm' ? 'vLLM' : 'SGLang'} ${schedule.setting}): ${JSON.stringify(schedule.ranges.map(([low, high, depth]) => [low, high, depth]))} from each level's best: ${per}`,
    `  \`servelab report ${runId}\` writes it as ${scheduleFileName(runId, schedule.engine)}; ${schedule.usage}`,
  ];
}

/** 0.02 → "2%", 0.955 → "95.5%". */
export function shareText(share: number): string {
  return `${Number((share * 100).toPrecision(3))}%`;
}

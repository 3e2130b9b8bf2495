import { formatGpuTime, formatNumber, formatPercent } from '../../util/format.js';
import {
  answerLeader,
  leadersOf,
  type SearchLeader,
  type SearchPointRow,
  type SearchPointStatus,
  type SearchRaceCell,
  type SearchSummary,
} from '../analysis/search-summary.js';
import { type ScheduleResult, scheduleFileName } from '../analysis/spec-schedule.js';

/**
 * Where a search stands or how it ended, for the run's final text, `show` and the reports: the best config with its
 * tolerance ("… within 2% of the best of 215 points, 37 measured"), the best per level, the budget spent, what is
 * still unresolved. With a tie-break, the best is its preferred point among those within the tolerance of the leader.
 */
export function formatSearchSummary(summary: SearchSummary): string {
  return searchSummaryLines(summary).join('\n');
}

/** What the points still in play are: leaders once resolved (nothing races then), else racing (at the end: unresolved). */
export function aliveText(summary: SearchSummary): string {
  if (!summary.done) return 'alive (racing)';
  return summary.done.resolved ? 'kept as leaders (nothing left racing)' : 'still racing when it ended';
}

export function searchSummaryLines(summary: SearchSummary): string[] {
  const tolerance = shareText(summary.tolerance);
  const resolved = summary.done?.resolved ?? false;
  const lines = [summary.done ? `search: ${summary.done.reason}` : `search: not finished (${summary.steps} block${summary.steps === 1 ? '' : 's'} decided)`];
  lines.push(`${summary.out} point${summary.out === 1 ? '' : 's'} out or settled; ${summary.alive} ${aliveText(summary)}`);
  lines.push(`budget: ${budgetText(summary)}`);
  if (summary.done && summary.done.unresolved.length > 0) lines.push('unresolved:', ...summary.done.unresolved.map((line) => `  ${line}`));
  // The answer last: the run's output ends with it.
  lines.push(searchAnswerText(summary));
  const { levels } = leadersOf(summary);
  if (levels.length > 0) {
    lines.push(resolved ? `best per level (each within ${tolerance} of that level's best):` : 'best per level so far (not resolved):');
    for (const leader of levels) lines.push(`  ${leaderText(leader, summary.unit)}`);
  }
  return lines;
}

/**
 * The search's answer in one line (run's final text, `show`, `ls`, the reports): the best config across levels with
 * the tolerance it was decided at ("… within 2% of the best of 215 points, 37 measured in 5 blocks"), or the leader
 * so far and "not resolved"; a single level's best when the search has no across-levels pick.
 */
export function searchAnswerText(summary: SearchSummary): string {
  const resolved = summary.done?.resolved ?? false;
  const broken = summary.combinations - summary.points;
  const of =
    `of ${summary.points} points, ${summary.measured} measured in ${summary.blocks} block${summary.blocks === 1 ? '' : 's'}` +
    (broken > 0 ? `; ${broken} other combinations break a constraint` : '');
  const pick = answerLeader(summary);
  if (!pick) return `no best config yet: ${summary.measured} of ${summary.points} points measured`;
  const where = pick.level === '*' ? 'across levels' : `at ${pick.level}`;
  return resolved
    ? `best config ${where}: ${pick.best}, within ${shareText(summary.tolerance)} of the best (${shareText(summary.confidence)} confidence) ${of}`
    : `best config so far ${where}: ${pick.best}, the leader ${of}; not resolved`;
}

const STATUS_TEXT: Record<SearchPointStatus, string> = {
  best: 'best (the answer)',
  leader: 'leader',
  'as good': 'as good',
  'not better': 'not better',
  out: 'out',
  racing: 'still racing',
  unresolved: 'ended unresolved',
};

/**
 * The search's per-point table (SearchSummary.table) as cell text, what `show`, the Markdown and the HTML report
 * print in place of verdicts against the space's first point: each measured point's standing overall and per race
 * (each level, then across levels) with the decision's figures, its trials per level; then the legend and the count
 * of points never measured.
 */
export function searchPointTable(summary: SearchSummary): { header: string[]; rows: string[][]; notes: string[] } {
  const levels = leadersOf(summary).levels.map((leader) => leader.level);
  const trialLevels = Object.keys(summary.table[0]?.trials ?? {});
  const races = [...(levels.length > 0 ? levels : trialLevels), '*'];
  const header = ['point', 'status', ...races.map((race) => (race === '*' ? 'across levels' : race)), `trials (${trialLevels.join(' / ')})`];
  const rows = summary.table.map((row) => [
    row.variant,
    row.status === 'best'
      ? bestText(summary, row)
      : `${STATUS_TEXT[row.status]}${row.decidedAfterBlock !== undefined ? ` after block ${row.decidedAfterBlock}` : ''}`,
    ...races.map((race) => raceText(summary, row, race)),
    trialLevels.map((level) => String(row.trials[level] ?? 0)).join(' / '),
  ]);
  const never = summary.points - summary.table.length;
  const notes = [
    "each race: the point's estimate vs that race's leader (block-adjusted, in the objective's direction) with its racing bounds and the blocks it rests on; — where the search stored no decision",
    ...(never > 0
      ? [
          `${never} of ${summary.points} points never measured${summary.done?.resolved ? ': ruled out by the response model' : summary.done ? ' when the search ended' : ' yet'}`,
        ]
      : []),
  ];
  return { header, rows, notes };
}

/** "best (the answer)" for the point the answer names, "best at single-stream" for a level's own best; "so far" until resolved. */
function bestText(summary: SearchSummary, row: SearchPointRow): string {
  const resolved = summary.done?.resolved ?? false;
  if (answerLeader(summary)?.best === row.variant) return resolved ? STATUS_TEXT.best : 'best so far (the answer, not resolved)';
  return `best${resolved ? '' : ' so far'} at ${leadersOf(summary)
    .levels.filter((leader) => leader.best === row.variant)
    .map((leader) => leader.level)
    .join(', ')}`;
}

function raceText(summary: SearchSummary, row: SearchPointRow, race: string): string {
  const cell: SearchRaceCell | undefined = row.races.find((entry) => entry.level === race);
  if (!cell) return '—';
  if (cell.estimate === undefined) return cell.status === 'best' ? 'best' : STATUS_TEXT[cell.status];
  const leader = summary.leaders.find((entry) => entry.level === race)?.variant;
  const versus = cell.versus !== undefined && cell.versus !== leader ? ` vs ${cell.versus}` : '';
  const share = (fraction: number): string => formatPercent(fraction * 100);
  const figures = `${share(cell.estimate)}${versus} (${share(cell.lower!)}…${share(cell.upper!)}, ${cell.blocks} block${cell.blocks === 1 ? '' : 's'})`;
  const word = cell.status === 'best' ? 'best by the tie-break, as good' : cell.status === 'leader' ? 'leader' : cell.status;
  return `${word}: ${figures}`;
}

/**
 * "4 min 09 s of GPU time spent of a 2 min budget (208%): …", or without a budget "… spent, no limit". A budget
 * overrun says why: the budget is checked between blocks, and a block started before it ran out runs whole.
 */
export function budgetText(summary: Pick<SearchSummary, 'spentGpuSeconds' | 'budgetGpuSeconds' | 'lastBlockFromGpuSeconds'>): string {
  const spent = `${formatGpuTime(summary.spentGpuSeconds)} of GPU time spent`;
  const budget = summary.budgetGpuSeconds;
  if (budget === undefined) return `${spent}, no limit`;
  const text = `${spent} of a ${formatGpuTime(budget)} budget (${shareText(summary.spentGpuSeconds / budget)})`;
  const from = summary.lastBlockFromGpuSeconds;
  if (summary.spentGpuSeconds <= budget || from === undefined || from >= budget) return text;
  return `${text}: the budget is checked between blocks, and the last block, started at ${formatGpuTime(from)}, ran whole`;
}

/**
 * One level's best in words, named first: "c=8: eagle3-s3-k2-d7 3,323 tok/s (+5.2% over the next)"; across levels
 * the leader's value is a ratio to each level's leader (1 = leads every level). A tie-break's choice is named
 * first, the leader it is as good as after it: "c=8: eagle3-s2-k1-d3 by the tie-break, as good as the leader …".
 */
export function leaderText(leader: SearchLeader, unit: string): string {
  const value =
    leader.level === '*' ? `at ${formatNumber(leader.value * 100)}% of the level leaders (geometric mean)` : `${formatNumber(leader.value)} ${unit}`.trimEnd();
  const margin = leader.margin === undefined ? '' : ` (+${formatNumber(leader.margin * 100)}% over the next)`;
  const level = leader.level === '*' ? 'across levels' : leader.level;
  if (leader.preferred !== undefined) return `${level}: ${leader.best} by the tie-break, as good as the leader ${leader.variant} ${value}${margin}`;
  return `${level}: ${leader.best} ${value}${margin}`;
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

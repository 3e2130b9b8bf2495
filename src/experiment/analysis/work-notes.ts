/**
 * What a variant's trials did that their figures do not show: requests that stopped short of the requested output
 * (unequal work), token counts the sources disagreed on, resent requests, an open loop that fell behind its rate.
 * One line per variant × workload and kind, for `show`, the report and the UI alike. Pure.
 */

import { mean, sum } from 'simple-statistics';
import type { TrialRecord } from '../../store/types.js';
import { formatNumber, formatShare } from '../../util/format.js';

/** "baseline c=8: early-stop: 16 of 40 tokens per request in 5 of 5 trials (200 requests stopped short)". */
export function workNotes(trials: readonly TrialRecord[]): string[] {
  const groups = new Map<string, TrialRecord[]>();
  for (const trial of trials) {
    const key = `${trial.variant} ${trial.workload}`;
    groups.set(key, [...(groups.get(key) ?? []), trial]);
  }
  const notes: string[] = [];
  for (const [label, group] of groups) {
    const of = `of ${group.length} trials`;
    const short = group.filter((trial) => (trial.metrics.outputLength?.shortRequests ?? 0) > 0);
    if (short.length > 0) {
      const requested = mean(short.map((trial) => trial.metrics.outputLength!.requestedMean));
      const generated = mean(short.map((trial) => trial.metrics.outputLength!.generatedMean));
      const requests = sum(short.map((trial) => trial.metrics.outputLength!.shortRequests));
      notes.push(
        `${label}: early-stop: ${formatNumber(generated)} of ${formatNumber(requested)} tokens per request in ${short.length} ${of} ` +
          `(${requests} requests stopped short; unequal work)`,
      );
    }
    const disagreeing = group.filter((trial) => (trial.metrics.tokenCounts?.disagreeing ?? 0) > 0);
    if (disagreeing.length > 0) {
      const requests = sum(disagreeing.map((trial) => trial.metrics.tokenCounts!.disagreeing));
      const source = disagreeing[0]!.metrics.tokenCounts!.method;
      notes.push(`${label}: token counts disagreed in ${requests} requests over ${disagreeing.length} ${of}; figures use ${source}`);
    }
    const resent = sum(group.map((trial) => trial.metrics.resends ?? 0));
    if (resent > 0) notes.push(`${label}: ${resent} requests resent after a kept-alive connection closed, over ${group.length} trials`);
    notes.push(...shapeNotes(label, group, of));
    const behind = group.filter((trial) => trial.metrics.rate && trial.metrics.rate.servedPerSecond < trial.metrics.rate.offeredPerSecond * 0.95);
    if (behind.length > 0) {
      const offered = behind[0]!.metrics.rate!.offeredPerSecond;
      const served = mean(behind.map((trial) => trial.metrics.rate!.servedPerSecond));
      notes.push(
        `${label}: offered ${formatNumber(offered)} req/s, served ${formatNumber(served)} req/s in ${behind.length} ${of}: ` +
          'the server fell behind (latency counts from each scheduled arrival)',
      );
    }
  }
  return notes;
}

const numbers = (values: ReadonlyArray<number | null | undefined>): number[] => values.filter((value): value is number => typeof value === 'number');

/** Multi-turn and shared-prefix workloads: TTFT p50 by turn, sessions a failure ended, designed vs achieved prefix hits. */
function shapeNotes(label: string, group: readonly TrialRecord[], of: string): string[] {
  const notes: string[] = [];
  const turned = group.filter((trial) => (trial.metrics.ttftMedianByTurnMs?.length ?? 0) > 0);
  if (turned.length > 0) {
    const turns = Math.max(...turned.map((trial) => trial.metrics.ttftMedianByTurnMs!.length));
    const byTurn = Array.from({ length: turns }, (_, index) => numbers(turned.map((trial) => trial.metrics.ttftMedianByTurnMs![index])))
      .map((values, index) => (values.length > 0 ? `${index + 1}: ${formatNumber(mean(values))} ms` : undefined))
      .filter((text) => text !== undefined);
    notes.push(`${label}: TTFT p50 by turn ${byTurn.join(', ')} (mean over ${turned.length} ${of})`);
  }
  const ended = sum(group.map((trial) => trial.metrics.sessionsEndedByFailure ?? 0));
  if (ended > 0) notes.push(`${label}: ${ended} sessions ended by a failed turn over ${group.length} trials (their later turns were not sent)`);
  const targeted = group.filter((trial) => trial.metrics.prefixCacheTargetHitRate != null && trial.metrics.prefixCacheHitRate != null);
  if (targeted.length > 0) {
    const achieved = mean(targeted.map((trial) => trial.metrics.prefixCacheHitRate!));
    const target = mean(targeted.map((trial) => trial.metrics.prefixCacheTargetHitRate!));
    notes.push(`${label}: prefix cache hit ${formatShare(achieved)} of prompt tokens, target ${formatShare(target)} (mean over ${targeted.length} ${of})`);
  }
  return notes;
}

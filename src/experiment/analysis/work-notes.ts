/**
 * What a variant's trials did that their figures do not show: requests that stopped short of the requested output
 * (unequal work), token counts the sources disagreed on, token events that carried several tokens (ITL per event),
 * resent requests, an open loop that fell behind its rate, a first trial after each server start unlike the later
 * ones (./warmup-trend.ts), a capacity search's path and notes (≥ max, 0, a p99 of few requests).
 * One line per variant × workload and kind, for `show`, the report and the UI alike. Pure.
 */

import { mean, sum } from 'simple-statistics';
import { capacityLines, capacityText, serverBehindLine } from '../../metrics/table.js';
import type { TrialRecord } from '../../store/types.js';
import { formatNumber, formatPercent, formatShare } from '../../util/format.js';
import { type PairKey, pairKey } from '../../util/trial-keys.js';
import { metricValue } from '../spec/metrics.js';
import type { MetricName } from '../spec/types.js';
import { firstTrialOutlier, K_MAD, MIN_RELATIVE } from './warmup-trend.js';

/** "baseline c=8: early-stop: 16 of 40 tokens per request in 5 of 5 trials (200 requests stopped short)". */
export function workNotes(trials: readonly TrialRecord[], metric: MetricName = 'outputTokensPerSecond'): string[] {
  const groups = new Map<PairKey, TrialRecord[]>();
  for (const trial of trials) groups.set(pairKey(trial), [...(groups.get(pairKey(trial)) ?? []), trial]);
  const notes: string[] = [];
  for (const group of groups.values()) {
    const label = `${group[0]!.variant} ${group[0]!.workload}`;
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
    const several = group.filter((trial) => trial.metrics.tokenCounts?.severalPerEvent);
    if (several.length > 0) {
      const requests = sum(several.map((trial) => trial.metrics.tokenCounts!.severalPerEvent!.requests));
      const tokens = sum(several.map((trial) => trial.metrics.tokenCounts!.severalPerEvent!.tokens));
      const events = sum(several.map((trial) => trial.metrics.tokenCounts!.severalPerEvent!.events));
      notes.push(
        `${label}: token events carried several tokens (${formatNumber(events > 0 ? tokens / events : 0)} per event) in ${requests} requests over ` +
          `${several.length} ${of}; figures count ${several[0]!.metrics.tokenCounts!.method}; ITL is the gap between events, TPOT per token`,
      );
    }
    const resent = sum(group.map((trial) => trial.metrics.resends ?? 0));
    if (resent > 0) notes.push(`${label}: ${resent} requests resent after a kept-alive connection closed, over ${group.length} trials`);
    notes.push(...shapeNotes(label, group, of));
    // Stored trials keep the offered rate, not the drawn schedule's: the one rule compares with that.
    const behind = group.filter(
      (trial) => trial.metrics.rate && serverBehindLine(trial.metrics.rate.servedPerSecond, trial.metrics.rate.offeredPerSecond, 'offered'),
    );
    if (behind.length > 0) {
      const offered = behind[0]!.metrics.rate!.offeredPerSecond;
      const served = mean(behind.map((trial) => trial.metrics.rate!.servedPerSecond));
      notes.push(`${label}: ${serverBehindLine(served, offered, 'offered')} (${behind.length} ${of})`);
    }
    const warmup = warmupNote(group, metric);
    if (warmup) notes.push(`${label}: ${warmup}`);
    notes.push(...capacityNotes(label, group));
  }
  return notes;
}

/** The first trial after each server start against the later ones on a start (trials that recorded their place). */
function warmupNote(group: readonly TrialRecord[], metric: MetricName): string | undefined {
  const value = (trial: TrialRecord): number => metricValue(trial.metrics, metric);
  const firsts = group.filter((trial) => trial.metrics.afterStart === 1).map(value);
  const laters = group.filter((trial) => (trial.metrics.afterStart ?? 0) > 1).map(value);
  const outlier = firstTrialOutlier(firsts, laters);
  if (!outlier) return undefined;
  return (
    `first trial after a server start is an outlier: ${metric} ${formatNumber(outlier.firstMedian)} (median of ${outlier.firsts}) vs ` +
    `${formatNumber(outlier.laterMedian)} in the later trials (median of ${outlier.laters}), ${formatPercent(outlier.change * 100)}, outside ` +
    `their range widened by ${K_MAD}×MAD (by ratio, ${MIN_RELATIVE * 100}% at least): the warm-up did not bring the server to this ` +
    "workload's steady state; raise client.warmup.requests or set client.warmup.perWorkload: true"
  );
}

/** "baseline capacity:…: capacity per trial 7, 7, 6; steps of the last: c=4 met, c=8 missed (…)", then the searches' notes. */
function capacityNotes(label: string, group: readonly TrialRecord[]): string[] {
  const searches = group.flatMap((trial) => (trial.metrics.capacity ? [trial.metrics.capacity] : []));
  const last = searches.at(-1);
  if (!last) return [];
  const steps = capacityLines(last)[1]!.replace('capacity steps:', 'steps of the last:');
  const values = searches.map((search) => capacityText(search.over, search.value)).join(', ');
  const notes = [...new Set(searches.flatMap((search) => search.notes))].map(
    (note) => `${label}: ${note} (${searches.filter((search) => search.notes.includes(note)).length} of ${group.length} trials)`,
  );
  return [`${label}: capacity per trial ${values}; ${steps}`, ...notes];
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

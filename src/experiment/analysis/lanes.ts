import { diffFingerprints } from '../../fingerprint/diff.js';
import type { Fingerprint, FingerprintChange } from '../../fingerprint/types.js';
import type { TrialRecord } from '../../store/types.js';
import { higherIsBetter, metricValue } from '../spec/metrics.js';
import type { ResolvedExperiment, Verdict } from '../spec/types.js';
import type { BlockedValue } from './stats.js';
import { compareBlocked } from './verdict.js';

/**
 * How one lane's level compares with the other lanes' at the same configs (experiment `lanes:`). Verdicts compare
 * configs within lanes, so a fast or slow lane does not bias them; this says which lane differs, like a drift
 * alarm, so a machine problem (clocks, power cap, a neighbour) is seen instead of averaged.
 */
export interface LaneLevel extends Verdict {
  lane: number;
  workload: string;
  /** A fingerprint of this lane's trials and one of another lane's at the same config, to diff (run/lane-report.ts). */
  fingerprints: { lane: number; others: number };
}

/** Lanes of a run, from its trials: none stored before lanes existed, or without `lanes:`. */
export function lanesOf(trials: readonly TrialRecord[]): number[] {
  return [...new Set(trials.flatMap((trial) => (trial.lane === undefined ? [] : [trial.lane])))].sort((a, b) => a - b);
}

/**
 * Each lane against the other lanes, per workload, on the run's metric: the rank test stratified by config (variant)
 * and the bootstrap CI of the within-config ratio, lane / others, so configs a lane ran more often do not bias it.
 * Pure; empty with fewer than two lanes.
 */
export function laneLevels(experiment: ResolvedExperiment, trials: readonly TrialRecord[]): LaneLevel[] {
  const lanes = lanesOf(trials);
  if (lanes.length < 2) return [];
  const variantIndex = new Map(experiment.variants.map((variant, index) => [variant.name, index]));
  const levels: LaneLevel[] = [];
  for (const workload of experiment.workloads) {
    const ofWorkload = trials.filter((trial) => trial.workload === workload.label && Number.isFinite(metricValue(trial.metrics, experiment.metric)));
    for (const lane of lanes) {
      // Stratum = config: a lane is compared with the others only where both measured the same variant.
      const values = (keep: (trial: TrialRecord) => boolean): BlockedValue[] =>
        ofWorkload.filter(keep).map((trial) => ({ value: metricValue(trial.metrics, experiment.metric), block: variantIndex.get(trial.variant) ?? -1 }));
      const own = values((trial) => trial.lane === lane);
      const others = values((trial) => trial.lane !== undefined && trial.lane !== lane);
      const verdict = compareBlocked(others, own, {
        ...experiment.verdict,
        seed: experiment.seed,
        higherIsBetter: higherIsBetter(experiment.metric),
      });
      const mine = ofWorkload.find((trial) => trial.lane === lane);
      const theirs = mine && ofWorkload.find((trial) => trial.lane !== undefined && trial.lane !== lane && trial.variant === mine.variant);
      if (!mine || !theirs) continue;
      levels.push({ ...verdict, lane, workload: workload.label, fingerprints: { lane: mine.fingerprintId, others: theirs.fingerprintId } });
    }
  }
  return levels;
}

/** Which lane measured what: its trials per config and the blocks it ran (1-based, as every view numbers them). */
export interface LaneShare {
  lane: number;
  name: string;
  trials: number;
  variants: Array<{ variant: string; trials: number }>;
  blocks: number[];
}

/** A lane whose level differs significantly from the other lanes', with the fingerprint facts that differ (others → lane). */
export interface LaneFinding extends LaneLevel {
  name: string;
  changes: FingerprintChange[];
}

/** The lane report of a run with `lanes:` (part of the conclusion, analysis/conclusion.ts): every view renders it. */
export interface LaneReport {
  lanes: LaneShare[];
  /** Each lane whose level differs from the others' at the same configs; empty: none does (or one lane only). */
  findings: LaneFinding[];
}

/** `lanes[i].name`, else lane<i+1> (also for a lane index the stored experiment no longer names). */
export function laneName(experiment: Pick<ResolvedExperiment, 'lanes'>, lane: number): string {
  return experiment.lanes?.[lane]?.name ?? `lane${lane + 1}`;
}

/**
 * Which lane measured what and which lane differs from the others (laneLevels), with its fingerprint difference
 * against a trial of another lane at the same config. Undefined for a run without lanes. Pure: `fingerprintOf`
 * reads a stored fingerprint.
 */
export function laneReport(
  experiment: ResolvedExperiment,
  trials: readonly TrialRecord[],
  fingerprintOf: (id: number) => Fingerprint | undefined,
): LaneReport | undefined {
  const lanes = lanesOf(trials);
  if (lanes.length === 0) return undefined;
  const shares = lanes.map((lane): LaneShare => {
    const own = trials.filter((trial) => trial.lane === lane);
    const variants = experiment.variants
      .map((variant) => variant.name)
      .filter((variant) => own.some((trial) => trial.variant === variant))
      .map((variant) => ({
        variant,
        trials: own.filter((trial) => trial.variant === variant).length,
      }));
    const blocks = [...new Set(own.map((trial) => trial.block + 1))].sort((a, b) => a - b);
    return { lane, name: laneName(experiment, lane), trials: own.length, variants, blocks };
  });
  const findings = laneLevels(experiment, trials)
    .filter((level) => level.significant)
    .map((level): LaneFinding => {
      const own = fingerprintOf(level.fingerprints.lane);
      const other = fingerprintOf(level.fingerprints.others);
      return { ...level, name: laneName(experiment, level.lane), changes: own && other ? diffFingerprints(other, own) : [] };
    });
  return { lanes: shares, findings };
}

/** How comparisons of configs stratify a run's trials (verdicts, best config, race). */
export interface Strata {
  /** Compare within strata (compareBlocked) rather than pooled. */
  blocked: boolean;
  stratumOf: (trial: { lane?: number; block: number }) => number;
}

/** By pass for a blocked schedule; with trials on several lanes, by lane too (laneStratum). */
export function comparisonStrata(trials: readonly TrialRecord[], blocked: boolean): Strata {
  const laned = lanesOf(trials).length > 1;
  return { blocked: blocked || laned, stratumOf: (trial) => (laned ? laneStratum(trial, blocked) : trial.block) };
}

/**
 * Verdicts with lanes: the stratum a trial is compared in. Configs are compared within a lane (pooled over its
 * blocks), and within a block too for a blocked schedule; undefined lane (no `lanes:`) leaves the block as it was.
 */
export function laneStratum(trial: { lane?: number; block: number }, blocked: boolean): number {
  if (trial.lane === undefined) return trial.block;
  return blocked ? trial.lane * LANE_STRIDE + trial.block : trial.lane;
}

/** Blocks per lane in a stratum number: far above any plan's block count (trials ≤ 1000). */
const LANE_STRIDE = 1_000_000;

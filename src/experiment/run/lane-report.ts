import { diffFingerprints, formatChanges } from '../../fingerprint/diff.js';
import type { Db } from '../../store/db.js';
import { getFingerprint, listTrials } from '../../store/queries.js';
import { formatChange, formatChangeInterval, formatPValue } from '../../util/format.js';
import { type LaneLevel, laneLevels, lanesOf } from '../analysis/lanes.js';
import type { ResolvedExperiment } from '../spec/types.js';
import { loadRun } from './run-store.js';

/** A lane whose level differs from the others', with the fingerprint facts that differ (the lane's vs another's). */
export interface LaneFinding extends LaneLevel {
  name: string;
  changes: string;
}

/**
 * The lane report of a run with `lanes:`: which lane measured how many trials, and each lane whose level differs
 * significantly from the other lanes' at the same configs, with its fingerprint difference. Empty without lanes.
 */
export function laneReport(db: Db, runId: number): { findings: LaneFinding[]; lines: string[] } {
  const { experiment } = loadRun(db, runId);
  const trials = listTrials(db, runId);
  const lanes = lanesOf(trials);
  if (lanes.length === 0) return { findings: [], lines: [] };
  const findings = laneLevels(experiment, trials)
    .filter((level) => level.significant)
    .map((level) => {
      const own = getFingerprint(db, level.fingerprints.lane);
      const other = getFingerprint(db, level.fingerprints.others);
      const changes = own && other ? formatChanges(diffFingerprints(other, own)) : '';
      return { ...level, name: laneName(experiment, level.lane), changes };
    });
  const counts = lanes.map((lane) => `${laneName(experiment, lane)} ${trials.filter((trial) => trial.lane === lane).length}`).join(', ');
  const lines = [
    `lanes (trials measured): ${counts}; verdicts compare configs within each lane`,
    ...findings.map((finding) => `  ${laneFindingLine(finding)}`),
  ];
  if (lanes.length > 1 && findings.length === 0) lines.push('  no lane differs significantly from the others at the same configs');
  return { findings, lines };
}

/** "lane2 is +15.0% (faster) vs the other lanes at the same configs (c=8: CI …, p = …); fingerprint: LANE 1 → 2". */
export function laneFindingLine(finding: LaneFinding): string {
  const fingerprint = finding.changes === '' ? 'no fingerprint difference recorded' : `fingerprint: ${finding.changes}`;
  return `${finding.name} is ${formatChange(finding.ratio)} (${finding.label}) vs the other lanes at the same configs (${finding.workload}: CI ${formatChangeInterval(finding.ciLow, finding.ciHigh)}, p = ${formatPValue(finding.pValue)}); ${fingerprint}`;
}

function laneName(experiment: ResolvedExperiment, lane: number): string {
  return experiment.lanes?.[lane]?.name ?? `lane${lane + 1}`;
}

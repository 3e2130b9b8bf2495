/** The lane report as text: `run`'s end, `show`, the Markdown and HTML reports and the UI print these lines. */

import { formatChanges } from '../../fingerprint/diff.js';
import { formatChange, formatChangeInterval, formatPValue } from '../../util/format.js';
import type { LaneFinding, LaneReport, LaneShare } from '../analysis/lanes.js';

/**
 * "lanes: verdicts compare configs within each lane", a line per lane (what it measured), then each lane whose
 * level differs from the others' with its fingerprint difference, or that none does.
 */
export function formatLaneReport(report: LaneReport): string[] {
  return [
    'lanes: verdicts compare configs within each lane',
    ...report.lanes.map((share) => `  ${laneShareLine(share)}`),
    ...report.findings.map((finding) => `  ${laneFindingLine(finding)}`),
    ...(report.lanes.length > 1 && report.findings.length === 0 ? ['  no lane differs significantly from the others at the same configs'] : []),
  ];
}

/** "lane1: 4 trials (baseline 2, twin 2) in blocks 1, 3–5". */
export function laneShareLine(share: LaneShare): string {
  const configs = share.variants.map((entry) => `${entry.variant} ${entry.trials}`).join(', ');
  const blocks = blockRanges(share.blocks);
  return `${share.name}: ${share.trials} ${share.trials === 1 ? 'trial' : 'trials'} (${configs}) in ${share.blocks.length === 1 ? 'block' : 'blocks'} ${blocks}`;
}

/** "lane2 is −13.0% (faster) vs the other lanes at the same configs (c=8: CI …, p = …); fingerprint: LANE 0 → 1". */
export function laneFindingLine(finding: LaneFinding): string {
  const fingerprint = finding.changes.length === 0 ? 'no fingerprint difference recorded' : `fingerprint: ${formatChanges(finding.changes)}`;
  return `${finding.name} is ${formatChange(finding.ratio)} (${finding.label}) vs the other lanes at the same configs (${finding.workload}: CI ${formatChangeInterval(finding.ciLow, finding.ciHigh)}, p = ${formatPValue(finding.pValue)}); ${fingerprint}`;
}

/** Ascending block numbers as ranges: 1, 3–5, 8. */
function blockRanges(blocks: readonly number[]): string {
  const ranges: string[] = [];
  for (let start = 0; start < blocks.length; ) {
    let end = start;
    while (end + 1 < blocks.length && blocks[end + 1] === blocks[end]! + 1) end += 1;
    ranges.push(end === start ? String(blocks[start]) : `${blocks[start]}–${blocks[end]}`);
    start = end + 1;
  }
  return ranges.join(', ');
}

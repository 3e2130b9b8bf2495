import type { Executor } from '../../exec/types.js';
import type { Fingerprint } from '../../fingerprint/types.js';
import type { Db } from '../../store/db.js';
import { telemetrySummaries } from '../../store/telemetry.js';
import { attributeMachineState } from '../../telemetry/attribution.js';
import { enforcePreflight, type PreflightMode, type PreflightReport, runPreflight, visibleGpus } from '../../telemetry/preflight.js';
import type { TelemetrySummary } from '../../telemetry/types.js';

/**
 * The experiment runner's entry points into machine state, one call each, so the runner stays about trials:
 * preflight before a server start, its findings in the fingerprint, attribution when a drift alarm fires.
 */

/** Check the machine before a server starts (throws a UserError in strict mode when something is wrong). */
export async function preflightBeforeStart(
  executor: Executor,
  serverEnv: Record<string, string>,
  mode: PreflightMode = 'warn',
  log: (line: string) => void = () => {},
): Promise<PreflightReport | undefined> {
  if (mode === 'off') return undefined;
  const gpus = visibleGpus(serverEnv);
  const report = await runPreflight(executor, gpus === undefined ? {} : { gpus });
  enforcePreflight(report, mode, log);
  return report;
}

/** The fingerprint with the preflight findings as facts, so a later diff says "preflight.gpu0.foreignMemory". */
export function withPreflight(fingerprint: Fingerprint, report: PreflightReport | undefined): Fingerprint {
  if (!report || report.findings.length === 0) return fingerprint;
  return { ...fingerprint, preflight: Object.fromEntries(report.findings.map((finding) => [finding.key, finding.message])) };
}

/** Machine-state lines for a drift alarm: the reference trials' telemetry (those that have some) against now. */
export function attributeDrift(db: Db, referenceTrialIds: readonly number[], current: TelemetrySummary | undefined): string[] {
  if (!current) return [];
  return attributeMachineState([...telemetrySummaries(db, referenceTrialIds).values()], current);
}

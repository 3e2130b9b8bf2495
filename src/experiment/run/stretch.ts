import { UserError } from '../../util/errors.js';
import { type PairKey, pairKey } from '../../util/trial-keys.js';
import type { PlannedTrial } from '../spec/types.js';
import { sendAccuracyPasses } from './accuracy.js';
import type { TrialConsumers } from './consumers.js';
import type { RunContext } from './context.js';
import { sendEquivalencePasses } from './equivalence.js';
import { preflightBeforeStart, withPreflight } from './machine.js';
import { guardReference } from './reference-guard.js';
import type { ServerHandle, ServerLifecycle } from './server-lifecycle.js';
import { measureTrial } from './trial.js';

/**
 * Start the stretch's server, measure its trials, stop it. An invalid trial is measured again in place, after the
 * server is re-verified (restarted if it died). Returns a drift-alarm message when the run must stop.
 */
export async function runStretch(
  context: RunContext,
  servers: ServerLifecycle,
  consumers: TrialConsumers,
  trials: PlannedTrial[],
): Promise<string | undefined> {
  const { experiment } = context;
  const serverKey = trials[0]!.serverKey;
  const variants = experiment.variants.filter((variant) => variant.serverKey === serverKey);
  const label = variants.map((variant) => variant.name).join(', ');
  const retries = experiment.validity?.trialRetries ?? 2;
  // The fingerprint's machine facts (a dozen short commands, 0.5-1 s on a loaded 2-core box) need no server: gathered
  // while the preflight runs and the server starts, instead of after it is ready. They never reject.
  const facts = servers.machineFacts(variants[0]!);
  const preflight = await preflightBeforeStart(context.executor, variants[0]!.server.env, experiment.preflight, context.log);
  let server = await servers.start(variants[0]!, label);
  let failure: unknown;
  try {
    const fingerprint = withPreflight(servers.fingerprint(server.running, await facts), preflight);
    const target = {
      runId: context.runId,
      experimentName: experiment.name,
      filePath: experiment.filePath,
      serverKey,
      variants: variants.map((v) => v.name),
      ...(context.lane && { lane: context.lane.index }),
    };
    guardReference(context.db, target, fingerprint, { accept: context.acceptEnvChange, log: context.log });
    await sendEquivalencePasses(context, server, variants);
    await sendAccuracyPasses(context, server, variants);
    // Trials of each variant × workload measured on this server start (a restart after an invalid trial clears it).
    let measuredOnStart = new Map<PairKey, number>();
    for (const trial of trials) {
      const variant = experiment.variants.find((candidate) => candidate.name === trial.variant)!;
      const key = pairKey(trial);
      for (let attempt = 0; ; attempt += 1) {
        const afterStart = (measuredOnStart.get(key) ?? 0) + 1;
        const measured = await measureTrial(context, server, { trial, variant, attempt, afterStart }, consumers.progressOf(trial));
        measuredOnStart.set(key, afterStart);
        const outcome = consumers.completed(measured, fingerprint);
        if (outcome.valid) {
          if (outcome.alarm) return outcome.alarm;
          break;
        }
        if (attempt >= retries) throw await trialFailure(context, server, consumers.nameOf(trial), outcome.reason, attempt + 1);
        const before = server;
        server = await servers.reverify(server, variants[0]!, label);
        if (server !== before) measuredOnStart = new Map();
      }
    }
    return undefined;
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    await servers.stop(server, failure);
  }
}

/** The run stops: cause, the end of the server log, and how to continue. */
async function trialFailure(context: RunContext, server: ServerHandle, trialName: string, reason: string, attempts: number): Promise<UserError> {
  const lines = await server.running.logTail(15).catch(() => []);
  const tail = lines.length > 0 ? lines.map((line) => `  | ${line}`).join('\n') : '  (no log written)';
  return new UserError(
    `${trialName} was invalid ${attempts} times; last: ${reason}\nlast lines of ${server.running.logPath}:\n${tail}`,
    `fix the cause, then \`servelab run ${context.experiment.filePath} --resume ${context.runId}\` (measured trials are kept)`,
  );
}

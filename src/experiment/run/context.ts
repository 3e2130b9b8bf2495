import type { Executor } from '../../exec/types.js';
import type { Db } from '../../store/db.js';
import type { ResolvedExperiment } from '../spec/types.js';
import type { RunJournal } from './journal.js';

/** What every part of one leased run shares: the run, where its servers run, its journal and its stop signal. */
export interface RunContext {
  /** For reads (startup history, drift history); writes go through `journal`. */
  db: Db;
  runId: number;
  experiment: ResolvedExperiment;
  executor: Executor;
  journal: RunJournal;
  /** Server logs go here (<workDir>/run-<id>/). */
  workDir: string;
  /** Aborts on Ctrl-C and when the lease is lost; its reason says which. */
  signal: AbortSignal;
  acceptDrift: boolean;
  /** Measure although the configuration differs from the reference run's (reference-guard.ts). */
  acceptEnvChange: boolean;
  log: (line: string) => void;
  /** The lane this part of the run measures on (experiment `lanes:`); absent without lanes. */
  lane?: { index: number; name: string };
}

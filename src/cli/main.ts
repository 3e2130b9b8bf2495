import { Command, CommanderError } from 'commander';
import { storeFault } from '../store/fault.js';
import { ExitCode, reportFailure } from '../util/exit.js';
import { VERSION } from '../version.js';
import { installHangupHandlers } from './hangup.js';

type Register = (program: Command) => void;

/**
 * Command modules are imported lazily: loading all of them costs ~1 s of CPU per start, and a run starts this
 * binary often (servers under test, Slurm jobs, SSH remotes). Only the named command's module is loaded;
 * `servelab --help` (or an unknown word) loads them all so help and "did you mean" stay complete.
 */
const commandLoaders: Record<string, () => Promise<Register>> = {
  simulate: async () => (await import('./commands/simulate.js')).registerSimulate,
  wait: async () => (await import('./commands/wait.js')).registerWait,
  launch: async () => (await import('./commands/launch.js')).registerLaunch,
  log: async () => (await import('./commands/log.js')).registerLog,
  bench: async () => (await import('./commands/bench.js')).registerBench,
  'compare-outputs': async () => (await import('./commands/compare-outputs.js')).registerCompareOutputs,
  run: async () => (await import('./commands/run.js')).registerRun,
  plan: async () => (await import('./commands/plan.js')).registerPlan,
  ls: async () => (await import('./commands/store-views.js')).registerStoreViews,
  report: async () => (await import('./commands/report.js')).registerReport,
  export: async () => (await import('./commands/export.js')).registerExport,
  ui: async () => (await import('./commands/ui.js')).registerUi,
  bisect: async () => (await import('./commands/bisect.js')).registerBisect,
};
commandLoaders.show = commandLoaders.ls!;
commandLoaders.diff = commandLoaders.ls!;

const program = new Command()
  .name('servelab')
  .description('Controlled performance experiments on LLM inference servers')
  .version(VERSION)
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride();

installHangupHandlers();

try {
  const requested = process.argv[2];
  const loaders = requested && commandLoaders[requested] ? [commandLoaders[requested]] : [...new Set(Object.values(commandLoaders))];
  for (const register of await Promise.all(loaders.map((load) => load()))) register(program);
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and version output are successful exits; commander has already printed usage errors.
    process.exitCode = error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
  } else {
    process.exitCode = reportFailure(storeFault(error));
  }
}

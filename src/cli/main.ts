import { Command, CommanderError } from 'commander';
import { reportFailure, ExitCode } from '../util/exit.js';
import { VERSION } from '../version.js';
import { registerSimulate } from './commands/simulate.js';
import { registerWait } from './commands/wait.js';
import { registerLaunch } from './commands/launch.js';
import { registerBench } from './commands/bench.js';
import { registerRun } from './commands/run.js';
import { registerStoreViews } from './commands/store-views.js';
import { registerReport } from './commands/report.js';
import { registerUi } from './commands/ui.js';

const program = new Command()
  .name('servelab')
  .description('Controlled performance experiments on LLM inference servers')
  .version(VERSION)
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride();

for (const register of [registerSimulate, registerWait, registerLaunch, registerBench, registerRun, registerStoreViews, registerReport, registerUi]) {
  register(program);
}

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    // Help and version output are successful exits; commander has already printed usage errors.
    process.exitCode = error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
  } else {
    process.exitCode = reportFailure(error);
  }
}

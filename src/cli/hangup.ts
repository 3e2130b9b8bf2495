/**
 * A closed terminal (SIGHUP) or a closed stdout/stderr pipe (`servelab … | head -1`) must not leave a server running
 * nor print a stack trace. Both are handled as a stop request: the command's own SIGTERM/SIGINT handler (which
 * stops its servers and keeps measured results) runs; a command with none simply exits.
 */
export function installHangupHandlers(): void {
  let handled = false;
  const hangUp = (exitCode: number): void => {
    if (handled) return;
    handled = true;
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      if (process.listenerCount(signal) > 0) {
        process.emit(signal, signal);
        return;
      }
    }
    process.exit(exitCode);
  };
  // 129 = 128 + SIGHUP, as a shell reports a process the hangup killed.
  process.on('SIGHUP', () => hangUp(129));
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      // Nobody reads the output any more: what was to be printed cannot be, which is the reader's choice.
      if (error.code === 'EPIPE' || error.code === 'EIO' || error.code === 'ERR_STREAM_DESTROYED') hangUp(0);
      else throw error;
    });
  }
}

/**
 * Which connections had served a response when they failed, and which errors mean the server closed a connection
 * under a request: what tells a kept-alive close (resent once) from a real failure.
 */
import { buildConnector } from 'undici';

/** Errors of a connection the server closed (reset, "other side closed", broken pipe), not refusals or timeouts. */
const CLOSED_CONNECTION_CODES = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

export function closedUnderUs(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException)?.code ?? (error as { cause?: NodeJS.ErrnoException })?.cause?.code;
  return code !== undefined && CLOSED_CONNECTION_CODES.has(code);
}

/** Bytes the connection had read when it failed; set on socket errors by servedTrackingConnector. */
const BYTES_READ = Symbol('servelab.bytesRead');

/**
 * The default connector, plus a note on every socket error of how many bytes its connection had read: undici passes
 * a reset (ECONNRESET, EPIPE) to the request as the socket's own error, which says nothing of the connection.
 */
export function servedTrackingConnector(): buildConnector.connector {
  const connect = buildConnector({});
  return (options, callback) =>
    connect(options, (error, socket) => {
      // Registered before undici's own listeners, so the note is on the error before any request sees it.
      socket?.on('error', (socketError: Error & { [BYTES_READ]?: number }) => {
        socketError[BYTES_READ] = socket.bytesRead;
      });
      callback(error, socket as never);
    });
}

/**
 * A connection closed under a request that had already served a response (it had read bytes before this request's
 * answer began): the kept-alive close a resend is meant for. Unknown (no note): no.
 */
export function closedAfterServing(error: unknown): boolean {
  if (!closedUnderUs(error)) return false;
  const noted = (error as { [BYTES_READ]?: number })[BYTES_READ];
  const bytesRead = noted ?? (error as { socket?: { bytesRead?: number } }).socket?.bytesRead;
  return bytesRead !== undefined && bytesRead > 0;
}

import type { IncomingMessage, ServerResponse } from 'node:http';

/** A request the simulator refuses, answered as an OpenAI-style error JSON. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = status === 404 ? 'NotFoundError' : status >= 500 ? 'ServiceUnavailableError' : 'BadRequestError',
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

export function errorBody(error: HttpError): object {
  return { error: { message: error.message, type: error.type, param: error.param, code: error.status } };
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'request body too large');
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw new HttpError(400, 'request body is empty; expected JSON');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, 'request body is not valid JSON');
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendText(res: ServerResponse, status: number, contentType: string, text: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Server-sent events writer. Every JSON event gets `servelab_sim.sent_ns`: CLOCK_MONOTONIC (shared by all processes
 * of the machine) at the moment of writing, the ground truth for measuring a client's own timing error.
 */
export class SseWriter {
  constructor(private readonly res: ServerResponse) {}

  open(): void {
    this.res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    this.res.flushHeaders();
  }

  /** Writes the events in one socket write; the promise (if any) resolves when the socket can take more. */
  events(payloads: object[], done = false): Promise<void> | undefined {
    const stamp = `,"servelab_sim":{"sent_ns":"${process.hrtime.bigint()}"}}`;
    let text = '';
    for (const payload of payloads) {
      const json = JSON.stringify(payload);
      text += `data: ${json.slice(0, -1)}${json.length > 2 ? stamp : stamp.slice(1)}\n\n`;
    }
    if (done) text += 'data: [DONE]\n\n';
    return this.write(text);
  }

  raw(text: string): Promise<void> | undefined {
    return this.write(text);
  }

  private write(text: string): Promise<void> | undefined {
    if (text === '' || this.res.writableEnded || this.res.destroyed) return undefined;
    if (this.res.write(text)) return undefined;
    return new Promise((resolve) => {
      const settle = (): void => {
        this.res.off('drain', settle);
        this.res.off('close', settle);
        resolve();
      };
      this.res.on('drain', settle);
      this.res.on('close', settle);
    });
  }

  end(): void {
    if (!this.res.writableEnded) this.res.end();
  }
}

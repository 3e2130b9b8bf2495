import { MAX_REQUEST_TOKENS } from '../util/defaults.js';
import { UserError } from '../util/errors.js';

/**
 * One request read from an input file (a trace line, a dataset record) must fit the model's context when it is given,
 * else servelab's stated cap: a request that cannot fit would only fail at the server, and an absurd length (10^9
 * tokens) would exhaust the load client's memory before the first request. Throws a UserError naming the line, as the
 * readers' other errors do.
 */
export function checkRequestTokens(where: string, inputTokens: number, outputTokens: number, contextTokens: number | undefined): void {
  const limit = contextTokens ?? MAX_REQUEST_TOKENS;
  if (inputTokens + outputTokens <= limit) return;
  const asked = `${inputTokens} prompt + ${outputTokens} output tokens`;
  if (contextTokens !== undefined)
    throw new UserError(
      `${where}: ${asked} exceed the model's context of ${contextTokens} tokens (client.contextTokens / --context-tokens)`,
      "drop or shorten that request, cap its output (maxOutputTokens), or give the model's real context if it is larger",
    );
  throw new UserError(
    `${where}: ${asked} exceed servelab's cap of ${MAX_REQUEST_TOKENS} tokens per request (the model's context is not given)`,
    "fix that request; if the model's context really is larger, give it: client.contextTokens in the experiment file, --context-tokens for bench",
  );
}

/**
 * What the opt-in real-engine tests read from the environment (see ../shared/real-engine/README.md): a llama-server
 * binary, a target model and draft models, and the flags that make this llama.cpp release speculate.
 */

export const LLAMA_SERVER = process.env.SERVELAB_LLAMA_SERVER;
export const LLAMA_MODEL = process.env.SERVELAB_LLAMA_MODEL;
export const LLAMA_DRAFT = process.env.SERVELAB_LLAMA_DRAFT;
export const LLAMA_DRAFT_BAD = process.env.SERVELAB_LLAMA_DRAFT_BAD;

/** The skip reason of a test that needs a server and a model (and a draft when `draft`), or false when they are set. */
export function llamaSkip(draft = false): string | false {
  if (LLAMA_SERVER && LLAMA_MODEL && (!draft || LLAMA_DRAFT)) return false;
  return draft
    ? 'set SERVELAB_LLAMA_SERVER, SERVELAB_LLAMA_MODEL and SERVELAB_LLAMA_DRAFT (a draft .gguf) to run it'
    : 'set SERVELAB_LLAMA_SERVER (llama-server binary) and SERVELAB_LLAMA_MODEL (a .gguf) to run it';
}

/** Draft-model speculation in this llama.cpp release needs all of these; `-md` alone does not speculate. */
export function speculate(draft: string): string[] {
  return ['--spec-type', 'draft-simple', '-md', draft, '--spec-draft-n-max', '4', '--spec-draft-n-min', '0', '-ngld', '99'];
}

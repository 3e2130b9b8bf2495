/**
 * Text bound for a terminal (stdout/stderr of every command) carries stored, dataset, server and log strings: an
 * ESC in a dataset category would move the cursor, recolour, retitle the window or hide the lines before it. Every
 * control character but newline and tab (C0, DEL, C1, and the bidirectional overrides that reorder what is shown)
 * is written as a visible `\xNN` / `\u{NNNN}` escape instead, so the text reads the same and does nothing.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is this function's job.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function terminalText(text: string): string {
  return text.replace(UNSAFE, (char) => {
    const code = char.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
  });
}

/**
 * JSON text bound for a terminal: JSON.stringify escapes C0 inside strings but leaves DEL, C1 (U+009B is CSI to
 * many terminals) and the bidirectional overrides raw; they become `\uNNNN` escapes, which parse back unchanged.
 */
export function terminalJson(json: string): string {
  return json.replace(UNSAFE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

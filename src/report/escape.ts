import { redactor } from '../util/redact.js';
import { terminalText } from '../util/terminal-text.js';

const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * Every escape below hides secrets first (stores written before redaction existed may hold some), so a redaction
 * marker is escaped like any text. Redacting the rendered page instead would put a raw `<redacted:…>` into it, which
 * a browser takes for a tag and drops, and would re-redact escaped markers (`&lt;redacted:…&gt;`) into garbage.
 */
const hidden = (text: unknown): string => redactor().text(String(text ?? ''));

/** Escape any stored or user-supplied text before it goes into HTML (text or attribute position). */
export function escapeHtml(text: unknown): string {
  return hidden(text).replace(/[&<>"']/g, (char) => entities[char] ?? char);
}

/**
 * Escape text for Markdown (a table cell or a line): `<`, `>` and `&` become entities, because Markdown renderers
 * pass raw HTML through (a variant named `<img onerror=…>` would run); emphasis, link, code and table punctuation
 * is backslash-escaped; newlines would break the row.
 */
export function escapeMarkdownCell(text: unknown): string {
  return terminalText(
    hidden(text)
      .replace(/[&<>]/g, (char) => entities[char] ?? char)
      .replace(/[\\`*_[\]|#~]/g, '\\$&')
      .replace(/\r\n|\n|\r/g, ' '),
  );
}

/**
 * Preformatted text (the terminal views of best config, equivalence, accuracy) as a Markdown code block. Nothing
 * inside a fence can be escaped, so the fence is one backtick longer than the longest backtick run in the text: a
 * dataset category holding a newline and ``` then cannot close the block early and have its `<img onerror=…>`
 * rendered as HTML. Control characters are made visible as for a terminal (the file is read in one, too).
 */
export function markdownCodeBlock(text: string): string {
  const shown = hidden(text);
  const longestRun = Math.max(0, ...(shown.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(Math.max(3, longestRun + 1));
  return `${fence}\n${terminalText(shown)}\n${fence}\n`;
}

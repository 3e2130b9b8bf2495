import { terminalText } from '../util/terminal-text.js';

const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escape any stored or user-supplied text before it goes into HTML (text or attribute position). */
export function escapeHtml(text: unknown): string {
  return String(text ?? '').replace(/[&<>"']/g, (char) => entities[char] ?? char);
}

/**
 * Escape text for Markdown (a table cell or a line): `<`, `>` and `&` become entities, because Markdown renderers
 * pass raw HTML through (a variant named `<img onerror=…>` would run); emphasis, link, code and table punctuation
 * is backslash-escaped; newlines would break the row.
 */
export function escapeMarkdownCell(text: unknown): string {
  return terminalText(
    String(text ?? '')
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
  const longestRun = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(Math.max(3, longestRun + 1));
  return `${fence}\n${terminalText(text)}\n${fence}\n`;
}

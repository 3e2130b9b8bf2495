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
  return String(text ?? '')
    .replace(/[&<>]/g, (char) => entities[char] ?? char)
    .replace(/[\\`*_[\]|#~]/g, '\\$&')
    .replace(/\r?\n/g, ' ');
}

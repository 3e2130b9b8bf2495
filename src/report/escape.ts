const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escape any stored or user-supplied text before it goes into HTML (text or attribute position). */
export function escapeHtml(text: unknown): string {
  return String(text ?? '').replace(/[&<>"']/g, (char) => entities[char] ?? char);
}

/** Escape text for a Markdown table cell: pipes and newlines would break the row. */
export function escapeMarkdownCell(text: unknown): string {
  return String(text ?? '').replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
}

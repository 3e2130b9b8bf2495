/**
 * The sections of a shell probe's output between its `--` marker lines (`a; echo --; b`): several facts for one
 * process start here, or one round trip over SSH. A section may be empty (its command printed nothing or failed),
 * so a marker may directly follow another.
 */
export function markerSections(text: string): string[] {
  return `\n${text}`.split(/\n--(?=\n|$)/).map((section) => section.slice(1));
}

/**
 * Recurring stream events read without JSON.parse. An OpenAI-compatible server streams one request's token chunks
 * from one serializer: every chunk is the same text except inside a few string values (the token text, the
 * simulator's send time). A template holds the constant text between those values; an event that is exactly
 * constant₀ "v₁" constant₁ … "vₙ" constantₙ, each vᵢ a valid JSON string body, parses to the template event's
 * value with those strings replaced — so it is read without parsing it. Anything else (a usage chunk, a
 * finish_reason, an error, another key order) does not match and is parsed in full.
 *
 * JSON.parse is the largest part of the client's CPU per token at saturation; a match costs a few string compares.
 */

import { valueAt } from '../util/value-at.js';

export type SlotPath = readonly (string | number)[];

/** A request's recurring event: its text around the slots, and its parsed value, whose slots each match rewrites. */
export interface EventTemplate {
  /** Constant text around the slots: segments.length = slots.length + 1. */
  readonly segments: readonly string[];
  /** The event's value as of the last match (a private copy: matches write into it). */
  readonly record: Record<string, unknown>;
  /** Where each slot's value lives in `record`, in the order the slots appear in the text. */
  readonly slots: ReadonlyArray<{ parent: Record<string | number, unknown>; key: string | number }>;
  /**
   * The segments of the whole SSE frame, `data: ` + event + blank line, so that a run of such frames is read
   * straight from the received text without splitting it into events first; absent when a segment holds a line
   * break (the frame would not be one `data:` line).
   */
  readonly frameSegments?: readonly string[];
}

const QUOTE = 34;
const BACKSLASH = 92;
const FIRST_PRINTABLE = 32;

/**
 * End (index of the closing quote) of the JSON string body starting at `from`, or -1 when the body holds a raw
 * control character (invalid JSON: the full parse must report it) or does not end.
 */
function stringBodyEnd(text: string, from: number): number {
  for (let i = from; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) return i;
    if (code < FIRST_PRINTABLE) return -1;
    if (code === BACKSLASH) i++;
  }
  return -1;
}

/** A string body's value: as written unless it has escapes, which JSON.parse decodes (and validates). */
function decodeBody(body: string): string | undefined {
  if (!body.includes('\\')) return body;
  try {
    return JSON.parse(`"${body}"`) as string;
  } catch {
    return undefined;
  }
}

/** Whether `data` holds `segment` at `pos`. (A slice compare: V8's startsWith with a position is several times slower.) */
function holdsAt(data: string, pos: number, segment: string): boolean {
  return data.slice(pos, pos + segment.length) === segment;
}

/** Where the string value of the first `"key":` in `data` starts (after its opening quote; spaces allowed around `:`), or -1. */
function valueStart(data: string, key: string | number): number {
  const quoted = JSON.stringify(String(key));
  for (let at = data.indexOf(quoted); at !== -1; at = data.indexOf(quoted, at + 1)) {
    let i = at + quoted.length;
    while (data[i] === ' ') i++;
    if (data[i] !== ':') continue; // the same text as a value, not as a key
    i++;
    while (data[i] === ' ') i++;
    return data[i] === '"' ? i + 1 : -1;
  }
  return -1;
}

/**
 * The template of `data` (a JSON object) with a slot at each of `paths` whose value is a string, or undefined when
 * none can be proven. Each slot is found by its key's text, then proven by parsing the event with marker values in
 * the slots: every marker must land at its own path (not at another key of the same name, not overwritten by a
 * duplicate key). The parse of the marked text is the template's record.
 */
export function buildTemplate(data: string, record: unknown, paths: readonly SlotPath[]): EventTemplate | undefined {
  const found: Array<{ start: number; end: number; path: SlotPath; value: string }> = [];
  for (const path of paths) {
    const value = valueAt(record, path);
    if (typeof value !== 'string') continue;
    const start = valueStart(data, path[path.length - 1]!);
    if (start === -1) return undefined;
    const end = stringBodyEnd(data, start);
    if (end === -1) return undefined;
    found.push({ start, end, path, value });
  }
  if (found.length === 0) return undefined;
  found.sort((a, b) => a.start - b.start);
  const segments: string[] = [];
  let marked = '';
  let from = 0;
  for (const [index, slot] of found.entries()) {
    if (slot.start < from) return undefined; // two paths found the same text
    segments.push(data.slice(from, slot.start));
    marked += `${data.slice(from, slot.start)}servelab-slot-${index}`;
    from = slot.end;
  }
  segments.push(data.slice(from));
  marked += data.slice(from);
  let copy: unknown;
  try {
    copy = JSON.parse(marked);
  } catch {
    return undefined;
  }
  if (copy === null || typeof copy !== 'object' || Array.isArray(copy)) return undefined;
  if (!found.every((slot, index) => valueAt(copy, slot.path) === `servelab-slot-${index}`)) return undefined;
  const slots = found.map((slot) => {
    const parent = valueAt(copy, slot.path.slice(0, -1)) as Record<string | number, unknown>;
    const key = slot.path[slot.path.length - 1]!;
    parent[key] = slot.value;
    return { parent, key };
  });
  const own = segments.map(flat);
  const template: EventTemplate = { segments: own, record: copy as Record<string, unknown>, slots };
  if (segments.some((segment) => segment.includes('\n') || segment.includes('\r'))) return template;
  return { ...template, frameSegments: [flat(`data: ${own[0]}`), ...own.slice(1, -1), flat(`${own[own.length - 1]}\n\n`)] };
}

/**
 * A flat copy: a segment sliced from one event would keep that event's text alive and compares slower than a
 * string of its own.
 */
function flat(text: string): string {
  return JSON.parse(JSON.stringify(text)) as string;
}

/**
 * When `data` is the template's event with other slot values, writes them (decoded) into the template's record
 * and returns true; otherwise returns false (the record is then stale) and the event must be parsed in full.
 */
export function matchTemplate(template: EventTemplate, data: string): boolean {
  return matchSegments(template.segments, template.slots, data, 0) === data.length;
}

/**
 * When a whole template frame (`data: ` event, blank line) starts at `pos` of received SSE text, writes its slot
 * values into the template's record and returns where the frame ends; otherwise returns -1.
 */
export function matchFrame(template: EventTemplate, text: string, pos: number): number {
  return template.frameSegments ? matchSegments(template.frameSegments, template.slots, text, pos) : -1;
}

/** End of segments₀ "v₁" segments₁ … segmentsₙ at `pos` of `text`, slot values written; -1 when it is not there. */
function matchSegments(segments: readonly string[], slots: EventTemplate['slots'], text: string, pos: number): number {
  for (let index = 0; index < slots.length; index++) {
    const segment = segments[index]!;
    if (!holdsAt(text, pos, segment)) return -1;
    pos += segment.length;
    const end = stringBodyEnd(text, pos);
    if (end === -1) return -1;
    const value = decodeBody(text.slice(pos, end));
    if (value === undefined) return -1;
    const slot = slots[index]!;
    slot.parent[slot.key] = value;
    pos = end;
  }
  const last = segments[slots.length]!;
  return holdsAt(text, pos, last) ? pos + last.length : -1;
}

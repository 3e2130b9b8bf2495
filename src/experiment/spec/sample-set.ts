import { textRecords } from '../../load/datasets/records.js';
import { UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import type { AccuracySettings } from './types.js';

/** One record of quality.accuracy's sample set: the right answer and its category (the prompt goes to the load client). */
export interface SampleItem {
  answer: string;
  category?: string;
  /** The prompt's length in characters (the plan prices the pass from it). */
  promptChars: number;
}

/**
 * The records sent, from the top of the file. Read when the experiment file loads, so a record without a prompt or
 * an answer stops `plan` and `run` before any server starts (one line naming the record), and again at each start.
 * `items` beyond the file's records is refused rather than run short: the plan, the interval widths and McNemar's
 * power the user chose were for that many items, and a silent 60 for 100 would tell neither `plan` nor the report.
 */
export function readSampleSet(settings: AccuracySettings): SampleItem[] {
  const all = textRecords(settings.format, settings.path);
  if (all.length === 0) throw new UserError(`${settings.path}: no records`, 'give one prompt and its answer per record', ExitCode.usage);
  if (settings.items !== undefined && settings.items > all.length)
    throw new UserError(
      `${settings.path}: quality.accuracy.items asks for ${settings.items} records, the file holds ${all.length}`,
      `lower quality.accuracy.items to ${all.length} or leave it out to send every record`,
      ExitCode.usage,
    );
  const records = all.slice(0, settings.items);
  const { prompt, answer, category } = settings.fields;
  return records.map(({ where, record }) => {
    if (typeof record[prompt] !== 'string' || record[prompt] === '') {
      throw new UserError(
        `${where}: missing field "${prompt}" (prompt)`,
        `give every record a "${prompt}", or map it with quality.accuracy.fields.prompt`,
        ExitCode.usage,
      );
    }
    const value = record[answer];
    if ((typeof value !== 'string' && typeof value !== 'number') || value === '') {
      throw new UserError(
        `${where}: missing field "${answer}" (answer)`,
        `give every record an "${answer}", or map it with quality.accuracy.fields.answer`,
        ExitCode.usage,
      );
    }
    const group = record[category];
    return {
      answer: String(value),
      promptChars: (record[prompt] as string).length,
      ...((typeof group === 'string' || typeof group === 'number') && group !== '' && { category: String(group) }),
    };
  });
}

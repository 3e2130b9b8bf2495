/**
 * The time a server log line carries, in ms on a common scale, or undefined. Formats: ISO-like dates (SGLang
 * "[2025-11-30 11:18:05", TGI and Ollama "2025-01-01T10:00:00.123Z", Python logging "2025-03-07 23:50:27,531")
 * and vLLM's year-less "INFO 06-22 02:54:36" / SGLang's "[12-16 14:27:08]". Year-less times are placed in one
 * year, which is right for the phase gaps of one startup (a startup across New Year is out of scope).
 */
const DATED = /(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,6}))?/;
const YEARLESS = /(?:^|[\s[])(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\b/;

export function lineTimeMs(line: string): number | undefined {
  const dated = DATED.exec(line);
  if (dated) {
    const [, year, month, day, hour, minute, second, fraction] = dated.map(Number) as number[];
    const ms = fraction === undefined || Number.isNaN(fraction) ? 0 : Number(`0.${dated[7]}`) * 1000;
    return Date.UTC(year!, month! - 1, day!, hour!, minute!, second!) + Math.round(ms);
  }
  const yearless = YEARLESS.exec(line);
  if (!yearless) return undefined;
  const [, month, day, hour, minute, second] = yearless.map(Number) as number[];
  if (month! < 1 || month! > 12 || day! < 1 || day! > 31) return undefined;
  return Date.UTC(2000, month! - 1, day!, hour!, minute!, second!);
}

/** The names of text encodings a layout's `encoding` key may give (the decoding itself is reader/textDecoding.ts). */

/** The encoding of a layout that names none. */
export const DEFAULT_ENCODING = 'utf-8';
/** The layout's `encoding` that means "UTF-16, little- or big-endian as the file's byte-order mark says". */
export const UTF16_BY_BOM = 'utf-16';

/**
 * The encoding a layout's `encoding` label names, as `TextDecoder` calls it (`latin1` and
 * `iso-8859-1` are `windows-1252`, as WHATWG reads them), `utf-16` for "by its BOM", or
 * undefined for a label `TextDecoder` does not know.
 */
export function encodingName(label: string): string | undefined {
  const text = label.trim().toLowerCase();
  if (text === UTF16_BY_BOM) return UTF16_BY_BOM;
  try {
    return new TextDecoder(text).encoding;
  } catch {
    return undefined;
  }
}

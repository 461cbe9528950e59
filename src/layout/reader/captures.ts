import { RejectError } from '../../errors.js';
import type { Capture, Layout } from '../model/layout.js';
import { quoteValue } from '../values/quoteValue.js';

/** A figure the file stated once, and where: how messages name it (`line 3`, `the file name`). */
export interface Captured {
  value: string;
  /** the file's line it was read from; absent for the file's name */
  line?: number;
  where: string;
}

/** How a message names a capture's figure: `stated_count 66 (line 6)`. */
export const capturedText = (name: string, captured: Captured): string => `${name} ${quoteValue(captured.value)} (${captured.where})`;

/**
 * The layout's `captures` of one file: each read once, from the first line of the preamble or
 * leading record its pattern matches, from a leading record's field, or from the file's name,
 * all before the first row. `known` at the header (or, without one, the first row) hands them to
 * the rows' plan and to the control totals; one that the file does not state rejects it there,
 * naming the capture and where it was looked for: a figure is never guessed.
 */
export class CaptureReader {
  private readonly found = new Map<string, Captured>();
  private readonly specs: readonly Capture[];

  constructor(
    layout: Layout,
    private readonly fileName: string | undefined,
  ) {
    this.specs = layout.captures ?? [];
    for (const spec of this.specs) {
      if (!spec.fileName || fileName === undefined) continue;
      const match = spec.fileName.exec(fileName);
      if (match?.[1] !== undefined) this.found.set(spec.name, { value: match[1].trim(), where: `the file name ${quoteValue(fileName)}` });
    }
  }

  /** A line of the preamble (or a leading record's text): the patterns not yet matched are tried on it. */
  line(text: string, line: number): void {
    for (const spec of this.specs) {
      if (!spec.line || this.found.has(spec.name)) continue;
      const match = spec.line.exec(text);
      if (match?.[1] !== undefined) this.found.set(spec.name, { value: match[1].trim(), line, where: `line ${line}` });
    }
  }

  /** A leading record: its fields for a `record` capture, its text for the patterns. */
  record(fields: readonly string[], text: string, line: number): void {
    const type = (fields[0] ?? '').trim();
    for (const spec of this.specs) {
      if (!spec.record || spec.record.type !== type || this.found.has(spec.name)) continue;
      const value = (fields[spec.record.field - 1] ?? '').trim();
      if (value !== '') this.found.set(spec.name, { value, line, where: `line ${line}, ${type} field ${spec.record.field}` });
    }
    this.line(text, line);
  }

  /** Every capture, once the rows begin at `line`: one the file does not state rejects it. */
  known(line: number): ReadonlyMap<string, Captured> {
    const missing = this.specs.filter((spec) => !this.found.has(spec.name));
    if (missing.length > 0) {
      const told = missing.map((spec) => `${spec.name}: ${this.lookedFor(spec)}`).join('; ');
      throw new RejectError(
        `line ${line}: the file does not state ${missing.length === 1 ? 'the figure' : 'the figures'} its layout captures (${told})`,
        {
          line,
          field: missing[0]!.name,
        },
      );
    }
    return this.found;
  }

  private lookedFor(spec: Capture): string {
    if (spec.fileName)
      return `the file name ${this.fileName === undefined ? 'is not known here' : quoteValue(this.fileName)} does not match /${spec.fileName.source}/`;
    if (spec.record) return `no leading ${spec.record.type} record with a value in field ${spec.record.field}`;
    return `no line above the rows matches /${spec.line!.source}/`;
  }
}

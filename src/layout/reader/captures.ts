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

/** The figure a capture's pattern matched: its `group` (a number or a name), the first by default. */
function figureOf(spec: Capture, match: RegExpExecArray | null): string | undefined {
  if (!match) return undefined;
  return typeof spec.group === 'string' ? match.groups?.[spec.group] : match[spec.group ?? 1];
}

/**
 * The layout's `captures` of one file: each read once, from the first line of the preamble or
 * leading record its pattern matches, from a leading record's field, or from the file's name,
 * all before the first row; and those `at` the footer from the first footer line they match,
 * after the last. `known` at the header (or, without one, the first row) hands the first to the
 * rows' plan and to the control totals, `footerKnown` at the file's end the footer's to the
 * totals; one that the file does not state rejects it there, naming the capture and where it was
 * looked for: a figure is never guessed.
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
      const figure = figureOf(spec, spec.fileName.exec(fileName));
      if (figure !== undefined) this.found.set(spec.name, { value: figure.trim(), where: `the file name ${quoteValue(fileName)}` });
    }
  }

  /** A line of the preamble (or a leading record's text): the patterns not yet matched are tried on it. */
  line(text: string, line: number): void {
    this.match(text, line, false);
  }

  /** A line of the footer: the footer's patterns not yet matched are tried on it. */
  footerLine(text: string, line: number): void {
    this.match(text, line, true);
  }

  private match(text: string, line: number, footer: boolean): void {
    for (const spec of this.specs) {
      if (!spec.line || (spec.at === 'footer') !== footer || this.found.has(spec.name)) continue;
      const figure = figureOf(spec, spec.line.exec(text));
      if (figure !== undefined) this.found.set(spec.name, { value: figure.trim(), line, where: `line ${line}` });
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

  /** Every capture above the rows, once the rows begin at `line`: one the file does not state rejects it. */
  known(line: number): ReadonlyMap<string, Captured> {
    this.refuseMissing(
      this.specs.filter((spec) => spec.at !== 'footer'),
      `line ${line}: the file does not state`,
      line,
    );
    return new Map(this.found);
  }

  /** Every capture, the footer's too, once the footer (`from` to `to`) is read: one it does not state rejects the file. */
  footerKnown(from: number, to: number): ReadonlyMap<string, Captured> {
    const lines = from === to ? `line ${from}` : `lines ${from} to ${to}`;
    this.refuseMissing(
      this.specs.filter((spec) => spec.at === 'footer'),
      `line ${from}: the footer (${lines}) does not state`,
      from,
    );
    return this.found;
  }

  /** Every figure read so far, by name, in the layout's order. */
  figures(): (Captured & { name: string })[] {
    return this.specs.flatMap((spec) => {
      const found = this.found.get(spec.name);
      return found ? [{ name: spec.name, ...found }] : [];
    });
  }

  private refuseMissing(specs: readonly Capture[], opening: string, line: number): void {
    const missing = specs.filter((spec) => !this.found.has(spec.name));
    if (missing.length === 0) return;
    const told = missing.map((spec) => `${spec.name}: ${this.lookedFor(spec)}`).join('; ');
    throw new RejectError(`${opening} ${missing.length === 1 ? 'the figure' : 'the figures'} its layout captures (${told})`, {
      line,
      field: missing[0]!.name,
    });
  }

  private lookedFor(spec: Capture): string {
    if (spec.fileName)
      return `the file name ${this.fileName === undefined ? 'is not known here' : quoteValue(this.fileName)} does not match /${spec.fileName.source}/`;
    if (spec.record) return `no leading ${spec.record.type} record with a value in field ${spec.record.field}`;
    if (spec.at === 'footer') return `no line of the footer matches /${spec.line!.source}/`;
    return `no line above the rows matches /${spec.line!.source}/`;
  }
}

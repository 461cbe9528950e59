import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Command } from 'commander';
import { resolveSettings, type RawFlags } from '../config/settings.js';
import { EXIT_OK, EXIT_PROBLEM, UsageError } from '../errors.js';
import { totalsText, type CheckedTotal } from '../layout/reader/totalsCheck.js';
import { linesText, type Figure, type FooterSeen } from '../layout/reader/readSettlement.js';
import { quoteValue } from '../layout/values/quoteValue.js';
import { printable } from '../report/printable.js';
import { jsonDocument } from './jsonOutput.js';
import { withSettingOptions } from './options.js';
import { loadDecodeOptions } from '../delivery/decodeSettings.js';
import { globToRegExp } from '../intake/names.js';
import { classifyName } from '../intake/classifyName.js';
import { removeContent, stagedContent } from '../delivery/stagedContent.js';
import { checkContent } from '../pipeline/fileChecks.js';
import { RejectError } from '../errors.js';
import type { FinanceDb } from '../finance/financeDb.js';
import { openFinance } from './financeConnection.js';

interface CheckFlags extends RawFlags {
  json?: boolean;
}

interface Checked {
  file: string;
  /** `ignored` or `not_ready`: a run with the configured pattern would not take the name (`error` says why) */
  outcome: 'ok' | 'rejected' | 'ignored' | 'not_ready';
  /** rows that would load (a good file): with a layout comparing rows seen before and the finance database, the new ones */
  rows: number | null;
  /** a layout comparing rows seen before: rows identical to rows other files loaded (null: not known without the finance database) */
  seen_before?: number | null;
  /** rows the layout's skipRows leaves out (a good file) */
  skipped_rows: number | null;
  /** the layout's control totals the file proved (a good file with totals) */
  totals?: CheckedTotal[];
  /** its balance rules that found no group to check: nothing of them proved */
  totals_not_checked?: string[];
  /** records continued over several lines and joined (the layout's `continuationLines`): where each starts, and its other lines */
  joined_lines?: { line: number; continued_on: number[] }[];
  /** the lines the layout's footer set aside after the rows (a good file): never rows */
  footer?: { first_line: number; last_line: number; lines: number; shown: { line: number; text: string }[] };
  /** the figures the layout's captures read (a good file): each by name, as written, and where */
  figures?: { name: string; value: string; line: number | null; where: string }[];
  error: string | null;
}

/** What a good file's line says of rows seen before: only for a layout that compares them. */
function seenText(seenBefore: number | null | undefined): string {
  if (seenBefore === undefined) return '';
  if (seenBefore === null) return '; rows seen before: not known without the finance database (--database-url)';
  if (seenBefore === 0) return ', all new: none seen before';
  return ` new, and ${seenBefore} seen before: identical to rows other files loaded, a run does not load them again`;
}
/** The footer a layout set aside, as `check` shows it: `; lines 16 to 19 set aside as the footer: "#-----…", "#共11笔记录", …`. */
function footerText(footer: Checked['footer']): string {
  if (!footer) return '';
  const shown = footer.shown.map((l) => quoteValue(l.text)).join(', ');
  const more = footer.lines > footer.shown.length ? ` and ${footer.lines - footer.shown.length} more` : '';
  return `; ${linesText({ first: footer.first_line, last: footer.last_line })} set aside as the footer: ${shown}${more}`;
}

/** The figures no control total shows (a statement's show theirs beside the rows' own): `; stated: export_time "…" (line 19)`. */
function figuresText(figures: Checked['figures'], totals: Checked['totals']): string {
  const proved = (totals ?? []).map((t) => t.agrees).join(' ');
  const others = (figures ?? []).filter((f) => !proved.includes(`${f.name} ${quoteValue(f.value)}`));
  return others.length > 0 ? `; stated: ${others.map((f) => `${f.name} ${quoteValue(f.value)} (${f.where})`).join(', ')}` : '';
}

const footerJson = (seen: FooterSeen): NonNullable<Checked['footer']> => ({
  first_line: seen.first,
  last_line: seen.last,
  lines: seen.lines,
  shown: seen.shown,
});
const figuresJson = (figures: Figure[]): NonNullable<Checked['figures']> =>
  figures.map((f) => ({ name: f.name, value: f.value, line: f.line ?? null, where: f.where }));

/** The joins a continuation-lines layout made, as `check` shows them: `; line 4 joined with line 5`. */
const joinedText = (joins: Checked['joined_lines']) =>
  (joins ?? [])
    .map((j) => `; line ${j.line} joined with line${j.continued_on.length > 1 ? 's' : ''} ${j.continued_on.join(', ')}`)
    .join('');

const WORDS = { rejected: 'rejected', ignored: 'a run would leave it alone', not_ready: 'a run would not take it yet' } as const;

/**
 * `check FILE…`: every check a run makes that needs no database or ledger, by the run's own
 * functions (the delivery's decoding, then pipeline/fileChecks.ts: a cut last record, every bad
 * row named with its line and field, the trailer and count records, the natural key's repeats
 * within the file), and, when the settings give a pattern, the run's verdict on the name.
 * "ok" means a run loads it, unless its keys were loaded before. Exit 1 if any is not ok.
 */
export function registerCheck(program: Command, setExit: (status: number) => void): void {
  withSettingOptions(program.command('check'), 'check')
    .argument('<files...>', 'settlement files to check')
    .description('checks files against the layout without loading them: every bad line and field; exit 1 if any file is bad')
    .action(async (files: string[], flags: CheckFlags) => {
      const settings = resolveSettings(flags);
      for (const file of files) {
        const stats = await stat(file).catch(() => null);
        if (!stats?.isFile()) throw new UsageError(`${file} is not a file that can be read`);
      }
      const pattern = globToRegExp(settings.pattern);
      const decode = await loadDecodeOptions(settings.decode, pattern);
      const names = { pattern, ignore: settings.ignore.map(globToRegExp), readyMarker: settings.readyMarker };
      /** What a run would make of the name, when the settings give a pattern (a file is often checked under another name than the default's). */
      const nameVerdict = async (file: string) => {
        if (!settings.patternGiven) return undefined;
        const present = new Set(await readdir(dirname(file)).catch(() => []));
        const verdict = classifyName(basename(file), names, present);
        if (verdict.kind === 'take') return undefined;
        const why = verdict.kind === 'not_ready' ? verdict.reason : `${verdict.reason} (pattern ${settings.patternText})`;
        return { outcome: verdict.kind === 'not_ready' ? ('not_ready' as const) : ('ignored' as const), error: why };
      };
      // a layout comparing rows seen before asks the finance database, when one is configured, what a run would
      const compares = settings.layout.seenBefore === true;
      const databaseGiven = settings.databaseUrl !== undefined || ['PGHOST', 'PGDATABASE', 'PGSERVICE'].some((v) => process.env[v]);
      let finance: FinanceDb | undefined;
      const seenBefore = async (path: string, name: string) => {
        finance ??= await openFinance(settings, 'judge', undefined);
        return finance.judge(path, name);
      };
      const checked: Checked[] = [];
      // a gzipped, zipped or encrypted file is decoded into a private folder first, as a run does
      const staging = await mkdtemp(join(settings.staging, 'settle-check-'));
      try {
        for (const [fileIndex, file] of files.entries()) {
          // no hash: check decides nothing by identity
          const fileStat = await stat(file);
          const delivered = { path: file, sha256: '', size: fileStat.size };
          const content = await stagedContent(delivered, decode, join(staging, String(fileIndex)));
          try {
            if (content.kind === 'failed') throw new UsageError(`${file}: ${content.reason}`);
            const read =
              content.kind === 'refused'
                ? { rows: 0, skippedRows: 0, error: content.error }
                : await checkContent(content.path, settings.layout, {
                    fileName: basename(file),
                    plain: content.layers.length === 0,
                    // as a run would take it now: delivered when it was last written
                    deliveredAt: fileStat.mtimeMs,
                  });
            const { skippedRows, totals, totalsNotChecked, joins, footer, figures } = read;
            let { rows, error } = read;
            let seen: number | null | undefined = compares ? null : undefined;
            if (compares && databaseGiven && !error && content.kind === 'content') {
              try {
                ({ rows, seenBefore: seen } = await seenBefore(content.path, basename(file)));
              } catch (err) {
                if (!(err instanceof RejectError)) throw err;
                error = err;
              }
            }
            // the content first (what to fix in the file); a good one under a name a run would not take is not ok either
            const name = error ? undefined : await nameVerdict(file);
            checked.push({
              file,
              outcome: error ? 'rejected' : (name?.outcome ?? 'ok'),
              rows: error || name ? null : rows,
              ...(seen !== undefined ? { seen_before: error || name ? null : seen } : {}),
              skipped_rows: error || name ? null : skippedRows,
              ...(totals && !error ? { totals } : {}),
              ...(totalsNotChecked && !error ? { totals_not_checked: totalsNotChecked } : {}),
              ...(joins?.length ? { joined_lines: joins.map((j) => ({ line: j.line, continued_on: j.continuedOn })) } : {}),
              ...(footer && !error ? { footer: footerJson(footer) } : {}),
              ...(figures?.length && !error ? { figures: figuresJson(figures) } : {}),
              error: error?.message ?? name?.error ?? null,
            });
          } finally {
            await removeContent(content, file);
          }
        }
      } finally {
        await rm(staging, { recursive: true, force: true });
        await finance?.close();
      }
      const exitStatus = checked.some((c) => c.outcome !== 'ok') ? EXIT_PROBLEM : EXIT_OK;
      if (flags.json) {
        process.stdout.write(`${jsonDocument({ files: checked, exit_status: exitStatus })}\n`);
      } else {
        for (const checkedFile of checked) {
          const left =
            seenText(checkedFile.seen_before) +
            (checkedFile.skipped_rows ? ` (and ${checkedFile.skipped_rows} left out by the layout)` : '');
          const proved =
            footerText(checkedFile.footer) +
            (checkedFile.totals?.length ? `; ${totalsText(checkedFile.totals)}` : '') +
            figuresText(checkedFile.figures, checkedFile.totals) +
            (checkedFile.totals_not_checked ?? []).map((note) => `; not checked: ${note}`).join('') +
            joinedText(checkedFile.joined_lines);
          const what =
            checkedFile.outcome === 'ok'
              ? `ok, ${checkedFile.rows} rows${left}${proved}`
              : `${WORDS[checkedFile.outcome]}: ${checkedFile.error}`;
          process.stdout.write(`${printable(checkedFile.file)}: ${printable(what)}\n`);
        }
      }
      setExit(exitStatus);
    });
}

import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Command } from 'commander';
import { EXIT_OK, EXIT_PROBLEM, UsageError } from '../errors.js';
import { suggestLayout, type Suggestion } from '../layout/suggest/suggestLayout.js';
import { printable } from '../report/printable.js';
import { jsonDocument } from './jsonOutput.js';
import { withCommandFlags } from './options.js';

interface SuggestFlags {
  json?: boolean;
}

/** The config file to start from, as it would be saved: a layout's own keys stay as configuration writes them. */
const configText = (s: Suggestion) => JSON.stringify(s.config, null, 2);

function printSuggestion(file: string, s: Suggestion): string {
  const lines = [`${printable(file)}: ${s.preset ? `preset ${s.preset}` : 'no preset fits as it is'}`, `  why: ${printable(s.why)}`];
  if (s.draft) {
    lines.push('  columns:');
    for (const c of s.draft.columns)
      lines.push(
        `    ${c.name} (${printable(c.header)}): ${c.type}${c.format ? ` ${c.format}` : ''}${c.required ? '' : ', optional'}; ${printable(c.why)}`,
      );
    lines.push(`  natural key: ${s.draft.naturalKey.join(', ') || 'none'}; ${printable(s.draft.naturalKeyWhy)}`);
    for (const note of s.draft.notes) lines.push(`  note: ${printable(note)}`);
    // what the sample could not decide, one line each: the lines to check first
    for (const doubt of s.draft.unsure) lines.push(`  unsure: ${printable(doubt)}`);
  }
  if (s.config.layout === undefined) return `${lines.join('\n')}\n`;
  lines.push(`  config (save it, review it, then \`settle-ingest check --config FILE ${printable(file)}\`):`);
  // one push per line, never push(...lines): a wide draft's config is more lines than a call takes arguments
  for (const l of configText(s).split('\n')) lines.push(`    ${l}`);
  return `${lines.join('\n')}\n`;
}

/**
 * `layout suggest FILE…`: which preset reads each file and why, or a draft layout inferred from
 * its first records (types, formats, a natural-key candidate) for the operator to review;
 * `check` then proves it. It reads the files only.
 */
export function registerLayout(program: Command, setExit: (status: number) => void): void {
  const layout = program.command('layout').description("work out what a partner's files look like");
  withCommandFlags(layout.command('suggest'))
    .argument('<files...>', 'sample files of one partner')
    .description('prints the preset that reads each file (and why), or a draft layout to review; `check --config` then proves it')
    .action(async (files: string[], flags: SuggestFlags) => {
      for (const file of files) {
        const stats = await stat(file).catch(() => null);
        if (!stats?.isFile()) throw new UsageError(`${file} is not a file that can be read`);
      }
      const suggestions: { file: string; s: Suggestion }[] = [];
      for (const file of files) suggestions.push({ file, s: await suggestLayout(file, basename(file)) });
      // a file that gave neither a preset nor a draft (nothing could be read) is exit 1
      const exitStatus = suggestions.some(({ s }) => s.config.layout === undefined) ? EXIT_PROBLEM : EXIT_OK;
      if (flags.json) {
        const docs = suggestions.map(({ file, s }) => ({
          file,
          preset: s.preset,
          why: s.why,
          alsoFits: s.alsoFits,
          columns: s.draft?.columns.map(({ json: _, ...c }) => ({ format: null, ...c })) ?? null,
          naturalKey: s.draft?.naturalKey ?? null,
          naturalKeyWhy: s.draft?.naturalKeyWhy ?? null,
          // what the sample could not decide comes last, each note starting "unsure: "
          notes: s.draft ? [...s.draft.notes, ...s.draft.unsure.map((doubt) => `unsure: ${doubt}`)] : [],
          // the config as a file's text: its layout keys are configuration's own (camelCase), not this document's
          config: configText(s),
        }));
        process.stdout.write(`${jsonDocument({ files: docs, exitStatus })}\n`);
      } else {
        process.stdout.write(suggestions.map(({ file, s }) => printSuggestion(file, s)).join('\n'));
      }
      setExit(exitStatus);
    });
}

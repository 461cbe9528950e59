import { parseLayout } from '../../src/layout/model/parseLayout.js';

/**
 * A bank statement without ids as the tests and the bench write it (`Date,Text,Amount,Balance`):
 * its rows keyed on their own values, the balance optional. `changes` adds `occurrence`,
 * `seenBefore`, another table or key.
 */
export function statementLayoutObject(changes: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    table: 'statement_lines',
    columns: [
      { name: 'booking_date', from: 'Date', type: 'date', format: 'dd.MM.yyyy' },
      { name: 'text', from: 'Text', type: 'text' },
      { name: 'amount', from: 'Amount', type: 'decimal' },
      { name: 'balance', from: 'Balance', type: 'decimal', required: false },
    ],
    naturalKey: ['booking_date', 'text', 'amount'],
    ...changes,
  };
}

/** The same, parsed as a config's layout is. */
export const statementLayout = (changes: Record<string, unknown> = {}) => parseLayout(statementLayoutObject(changes), 'test');

/** The message a layout object is refused with, as a config's layout is read; undefined when it is taken. */
export function layoutError(raw: Record<string, unknown>): string | undefined {
  try {
    parseLayout(raw, 'layout');
  } catch (err) {
    return (err as Error).message;
  }
  return undefined;
}

/**
 * The synthetic export of fixtures/statements/continuation_export.csv (`Date,Description,Amount,Balance`):
 * keyed on its date and description; `changes` adds `continuationLines` or a check.
 */
export function describedStatementLayoutObject(changes: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    table: 'statement_rows',
    columns: [
      { name: 'date', from: 'Date', type: 'date' },
      { name: 'description', from: 'Description', type: 'text' },
      { name: 'amount', from: 'Amount', type: 'decimal' },
      { name: 'balance', from: 'Balance', type: 'decimal' },
    ],
    naturalKey: ['date', 'description'],
    ...changes,
  };
}

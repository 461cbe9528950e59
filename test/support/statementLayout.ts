import type { Layout } from '../../src/layout/model/layout.js';
import { parseLayout } from '../../src/layout/model/parseLayout.js';

/**
 * A bank statement without ids, as test/db/stagedLoad.test.ts and test/unit/statementKeys.test.ts
 * write it (`Date,Text,Amount,Balance`, dates `dd.MM.yyyy`, an optional balance): keyed on the
 * row's own date, text and amount, parsed as a user's layout; `changes` (an occurrence, rows seen
 * before, another key) over it.
 */
export const statementLayout = (changes: Record<string, unknown> = {}): Layout =>
  parseLayout(
    {
      table: 'statement_lines',
      columns: [
        { name: 'booking_date', from: 'Date', type: 'date', format: 'dd.MM.yyyy' },
        { name: 'text', from: 'Text', type: 'text' },
        { name: 'amount', from: 'Amount', type: 'decimal' },
        { name: 'balance', from: 'Balance', type: 'decimal', required: false },
      ],
      naturalKey: ['booking_date', 'text', 'amount'],
      ...changes,
    },
    'test',
  );

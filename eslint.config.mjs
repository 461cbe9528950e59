// typescript-eslint's type-checked rules over the shipped code (src/), and over the tests only
// the rules that catch bugs (a promise left floating, passed where a callback is wanted, or a
// value awaited that is no promise). The benches are not linted; the tests' other findings
// (mostly `no-unsafe-*` on parsed JSON output) are their own step.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    files: ['src/**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // house style: an `async` method implementing a Promise-returning port (Intake, SqlPort, the
      // synchronous syncFs twins of fs/promises) turns a throw into a rejection; dropping `async`
      // to please this rule would make such a throw synchronous, a behaviour change
      '@typescript-eslint/require-await': 'off',
      // house style: a driver row (SqlRow = Record<string, unknown>) and a ledger event's JSON
      // details are decoded at the edge with String() once null is ruled out (sqlRows.ts text/iso);
      // the rule reads that narrowed `unknown` as `{}` and flags all 16 such decodings
      '@typescript-eslint/no-base-to-string': 'off',
      // `.catch((err) => Promise.reject(...))` passes a caught reason on unchanged when it is not the
      // one being translated: that reason is whatever the driver threw, typed any/unknown
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      // house style: a leading underscore names a parameter or element kept for its position only
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // every line is an event of the table of src/logEvents.ts: its Logger takes only those names,
      // each at its level; pino's own Logger would take any string
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'pino',
              importNames: ['Logger', 'BaseLogger', 'LogFn'],
              message: "log through src/logEvents.ts's Logger: it takes only the events of its table, each at its level",
            },
          ],
        },
      ],
    },
  },
  {
    // the table's Logger is made of pino's
    files: ['src/logEvents.ts'],
    rules: { '@typescript-eslint/no-restricted-imports': 'off' },
  },
  {
    // the run's flow reads in one screen, each step a function of its own (docs/DESIGN.md's order): no
    // function of the pipeline over 100 lines. Comments and blank lines are not counted: a comment
    // says why, and is never what to cut to fit the number.
    files: ['src/pipeline/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 100, skipBlankLines: true, skipComments: true, IIFEs: true }],
    },
  },
  {
    files: ['test/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      // tsconfig.json holds src/ alone: the tests' types come from the check config, as `tsc -p tsconfig.check.json` sees them
      parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
);

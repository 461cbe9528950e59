// The house's import rules, held by a tool (`npm run lint`). docs/ARCHITECTURE.md draws them in words.
//
// Rooms by rank; a room may import only rooms of a lower rank (and the base files in src/*.ts):
//   5  cli
//   4  pipeline, report, config
//   3  transferLog (an SFTP server's own log, read: what a run's gate and the audit both ask)
//   2  intake, ledger, finance, delivery, demo, calendar
//   1  layout, db
//   0  src/*.ts (errors, faults, owner, redaction, private files, destinations)
// and no circle anywhere, between files or folders, type-only imports included.
//
// layout/ holds four concerns, ranked the same way among themselves:
//   4  suggest  (`layout suggest`: drafting a layout from a sample)
//   3  reader   (a file's bytes to typed rows: decoding, records, columns, trailers, totals)
//   2  model    (the layout itself: its types, its JSON, the presets)
//   1  values   (the syntax of one value: dates, months, zones, currencies, encodings, quoting)
const RANKS = {
  cli: 5,
  pipeline: 4,
  report: 4,
  config: 4,
  transferLog: 3,
  intake: 2,
  ledger: 2,
  finance: 2,
  delivery: 2,
  demo: 2,
  calendar: 2,
  layout: 1,
  db: 1,
};
const rooms = Object.keys(RANKS);
const LAYOUT_RANKS = { suggest: 4, reader: 3, model: 2, values: 1 };
const layoutRooms = Object.keys(LAYOUT_RANKS);
const layoutNotBelow = (part) => layoutRooms.filter((other) => other !== part && LAYOUT_RANKS[other] >= LAYOUT_RANKS[part]);
const notAtOrAbove = (room) => rooms.filter((other) => other !== room && RANKS[other] >= RANKS[room]);

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A circle between files (type-only imports too) means two concerns that cannot be read apart.',
      from: { path: '^src/' },
      to: { circular: true },
    },
    ...rooms.map((room) => ({
      name: `rank-${room}`,
      severity: 'error',
      comment: `${room}/ (rank ${RANKS[room]}) imports only rooms of a lower rank: see .dependency-cruiser.cjs and docs/ARCHITECTURE.md`,
      from: { path: `^src/${room}/` },
      to: { path: `^src/(${notAtOrAbove(room).join('|')})/` },
    })),
    ...layoutRooms
      .filter((part) => layoutNotBelow(part).length > 0)
      .map((part) => ({
        name: `rank-layout-${part}`,
        severity: 'error',
        comment: `layout/${part}/ (rank ${LAYOUT_RANKS[part]} within layout/) imports only lower parts of layout/: see docs/ARCHITECTURE.md`,
        from: { path: `^src/layout/${part}/` },
        to: { path: `^src/layout/(${layoutNotBelow(part).join('|')})/` },
      })),
    {
      name: 'layout-in-its-parts',
      severity: 'error',
      comment: 'Every file of layout/ lives in one of its four parts.',
      from: { path: '^src/layout/[^/]+\\.ts$' },
      to: {},
    },
    {
      name: 'intake-kind-private',
      severity: 'error',
      comment:
        'An intake kind (intake/local/, intake/sftp/) is reached through the registry of intake/openIntake.ts alone: no other room knows a kind (docs/ARCHITECTURE.md, "Adding an intake kind").',
      from: { path: '^src/', pathNot: '^src/intake/' },
      to: { path: '^src/intake/(local|sftp)/' },
    },
    {
      name: 'intake-kinds-apart',
      severity: 'error',
      comment: 'One intake kind never imports another: what two kinds share lives in intake/ itself.',
      from: { path: '^src/intake/(local|sftp)/' },
      to: { path: '^src/intake/(local|sftp)/', pathNot: '^src/intake/$1/' },
    },
    {
      name: 'base-imports-no-room',
      severity: 'error',
      comment: 'The base files (src/*.ts) are what every room may use; they use no room.',
      from: { path: '^src/[^/]+\\.ts$' },
      to: { path: '^src/[^/]+/' },
    },
    {
      name: 'src-never-imports-tests',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|scripts)/' },
    },
    {
      name: 'no-unresolvable',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: 'declared-dependencies-only',
      severity: 'error',
      comment: 'A package reached through another package (pgpass through pg) breaks when that one changes.',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown', 'npm-dev'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
    exclude: { path: '^dist/' },
  },
};

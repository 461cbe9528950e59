// The types of configFixture.mjs, for the tests in TypeScript that use it.
export declare const intakeOf: (i: number) => string;
export declare function writeConfig(dir: string, count: number, opts?: { folders?: boolean }): string;

// The types of transferLogFixture.mjs, for the benches in TypeScript that use it.
export declare const name: (i: number) => string;
export declare const sizeOf: (i: number) => number;
export declare const uploadAt: (i: number) => number;
export declare const notReady: (i: number) => boolean;
export declare function writeLog(path: string, uploads: number, intake?: string): Promise<void>;
export declare function writeLedger(path: string, uploads: number, opts?: { outcome?: 'loaded' | 'ignored' }): Promise<void>;

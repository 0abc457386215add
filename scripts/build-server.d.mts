/** Types of build-server.mjs for the TypeScript that imports it (test/server-build.ts). */
export declare const SERVER_PROGRAMS: Readonly<Record<string, string>>;
export declare function buildServerPrograms(outDir: string): Promise<void>;

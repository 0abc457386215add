/**
 * One HTTP call an Ancla client makes (read from github:SideQuest-Group/ancla-client: the Go CLI
 * in internal/cli, the Go, Python and TypeScript SDKs in sdks/), as the contract suite checks it
 * against Slipway. The table in docs/ancla-compatibility.md is generated from these lists
 * (scripts/ancla-table.ts).
 */
export type AnclaClient = 'go-cli' | 'go-sdk' | 'python-sdk' | 'ts-sdk';

export type AnclaCall = {
  client: AnclaClient;
  /** As the client sends it. */
  method: string;
  /** As the client sends it: `/api/v1`, its trailing slash, `{placeholders}` for the slugs and ids, its query. */
  path: string;
  /** The fields the client decodes from the answer, `path:type` (`[]` each element; `a|b` either type). */
  decodes: string[];
  /** The covering test (`file.test.ts > its title`), or `''` when Slipway does not serve the call. */
  test: string;
};

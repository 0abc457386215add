import type { AnclaCall } from './types.js';

/** `ancla deploy` (following the pipeline), `ancla status`, `ancla services status`. */
export const calls: AnclaCall[] = [
  {
    client: 'go-cli',
    method: 'GET',
    path: '/api/v1/workspaces/{ws}/projects/{project}/pipeline/status?service={svc}&env={env}',
    decodes: [
      'build:object|null',
      'build.status:string',
      'build.error_detail:string|null',
      'deploy:object|null',
      'deploy.status:string',
      'deploy.error_detail:string|null',
    ],
    test: 'pipeline.test.ts > pipeline status',
  },
];

/**
 * Operations of Ancla's OpenAPI document that none of its clients calls, served here over
 * Slipway's records (docs/ancla-compatibility.md lists them after the clients' calls).
 */
export const uncalled: Array<{ method: string; path: string; test: string }> = [
  'POST /pipeline/deploy',
  'GET /pipeline/history',
  'GET /pipeline/metrics',
  'POST /pipeline/rollback',
  'POST /promote',
  'GET /promote/preview',
  'GET /observability',
].map((operation) => {
  const [method, path] = operation.split(' ') as [string, string];
  return {
    method,
    path: `/api/v1/workspaces/{ws}/projects/{project}${path}`,
    test: 'pipeline.test.ts > project pipeline: history, metrics, rollback, promote and its preview, deploy, observability',
  };
});

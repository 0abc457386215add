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

import type { AnclaCall } from './types.js';

const TEST = 'workspaces.test.ts > configuration';
const SCOPES = {
  workspace: '/api/v1/workspaces/{ws}/config/',
  project: '/api/v1/workspaces/{ws}/projects/{project}/config/',
  env: '/api/v1/workspaces/{ws}/projects/{project}/envs/{env}/config/',
};

/**
 * `ancla config list|set|delete|import|apply --scope workspace|project|env` (the service scope,
 * `.../services/{svc}/config/`, is the services family's). The SDKs set configuration on services only.
 */
export const calls: AnclaCall[] = Object.values(SCOPES).flatMap((base): AnclaCall[] => [
  {
    client: 'go-cli',
    method: 'GET',
    path: base,
    decodes: ['[].id:string', '[].name:string', '[].value:string', '[].secret:boolean', '[].buildtime:boolean'],
    test: TEST,
  },
  { client: 'go-cli', method: 'POST', path: base, decodes: [], test: TEST },
  { client: 'go-cli', method: 'DELETE', path: `${base}{config_id}`, decodes: [], test: TEST },
  {
    client: 'go-cli',
    method: 'POST',
    path: `${base}bulk`,
    decodes: ['created[]:string', 'skipped[]:string', 'errors[].name:string', 'errors[].error:string'],
    test: TEST,
  },
]);

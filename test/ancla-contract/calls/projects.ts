import type { AnclaCall } from './types.js';

const TEST = 'workspaces.test.ts > projects';
const LIST = ['[].id:string', '[].name:string', '[].slug:string', '[].workspace_slug:string', '[].service_count:integer'];
const ONE = [
  'id:string',
  'name:string',
  'slug:string',
  'workspace_slug:string',
  'workspace_name:string',
  'service_count:integer',
  'created:string',
  'updated:string',
];
const SDKS = ['go-sdk', 'python-sdk', 'ts-sdk'] as const;

/** A workspace's projects. */
export const calls: AnclaCall[] = [
  // projects list / list / completion / init / deploy's project choice
  { client: 'go-cli', method: 'GET', path: '/api/v1/workspaces/{ws}/projects/', decodes: LIST, test: TEST },
  // deploy: a new project (`{name, slug}`)
  { client: 'go-cli', method: 'POST', path: '/api/v1/workspaces/{ws}/projects/', decodes: ['slug:string', 'name:string'], test: TEST },
  // projects get
  { client: 'go-cli', method: 'GET', path: '/api/v1/workspaces/{ws}/projects/{project}', decodes: ONE.slice(1), test: TEST },
  // deploy: checks the linked project still exists
  { client: 'go-cli', method: 'GET', path: '/api/v1/workspaces/{ws}/projects/{project}/', decodes: ['slug:string'], test: TEST },
  ...SDKS.flatMap((client): AnclaCall[] => [
    { client, method: 'GET', path: '/api/v1/workspaces/{ws}/projects/', decodes: LIST, test: TEST },
    { client, method: 'GET', path: '/api/v1/workspaces/{ws}/projects/{project}', decodes: ONE, test: TEST },
    { client, method: 'POST', path: '/api/v1/workspaces/{ws}/projects/', decodes: ONE, test: TEST },
    { client, method: 'PATCH', path: '/api/v1/workspaces/{ws}/projects/{project}', decodes: ONE, test: TEST },
    // A project without services (the one the client made); one with services is 409.
    { client, method: 'DELETE', path: '/api/v1/workspaces/{ws}/projects/{project}', decodes: [], test: TEST },
  ]),
];

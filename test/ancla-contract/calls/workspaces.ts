import type { AnclaCall } from './types.js';

const TEST = 'workspaces.test.ts > workspaces';
const LIST = [
  '[].id:string',
  '[].name:string',
  '[].slug:string',
  '[].member_count:integer',
  '[].project_count:integer',
  '[].service_count:integer',
];
const ONE = [
  'id:string',
  'name:string',
  'slug:string',
  'member_count:integer',
  'project_count:integer',
  'service_count:integer',
  'members[].username:string',
  'members[].email:string',
  'members[].admin:boolean',
];
const SDKS = ['go-sdk', 'python-sdk', 'ts-sdk'] as const;

/** Workspaces (Slipway: organizations by slug). */
export const calls: AnclaCall[] = [
  // ancla login --manual / whoami / workspaces list / list / completion / init / deploy's workspace choice
  { client: 'go-cli', method: 'GET', path: '/api/v1/workspaces/', decodes: [...LIST.slice(0, 5)], test: TEST },
  // deploy: a new workspace (`{name, personal}`)
  { client: 'go-cli', method: 'POST', path: '/api/v1/workspaces/', decodes: ['slug:string', 'name:string'], test: TEST },
  // workspaces get
  {
    client: 'go-cli',
    method: 'GET',
    path: '/api/v1/workspaces/{ws}',
    decodes: [
      'name:string',
      'slug:string',
      'project_count:integer',
      'service_count:integer',
      'members[].username:string',
      'members[].email:string',
      'members[].admin:boolean',
    ],
    test: TEST,
  },
  // deploy: checks the linked workspace still exists
  { client: 'go-cli', method: 'GET', path: '/api/v1/workspaces/{ws}/', decodes: ['slug:string'], test: TEST },
  ...SDKS.flatMap((client): AnclaCall[] => [
    { client, method: 'GET', path: '/api/v1/workspaces/', decodes: LIST, test: TEST },
    { client, method: 'GET', path: '/api/v1/workspaces/{ws}', decodes: ONE, test: TEST },
    { client, method: 'POST', path: '/api/v1/workspaces/', decodes: ONE.slice(0, 6), test: TEST },
    { client, method: 'PATCH', path: '/api/v1/workspaces/{ws}', decodes: ONE.slice(0, 6), test: TEST },
    // A workspace without projects (the one the client made); one with projects is 409.
    { client, method: 'DELETE', path: '/api/v1/workspaces/{ws}', decodes: [], test: TEST },
  ]),
];

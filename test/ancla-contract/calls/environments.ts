import type { AnclaCall } from './types.js';

const TEST = 'workspaces.test.ts > environments';
const LIST = ['[].id:string', '[].name:string', '[].slug:string', '[].service_count:integer', '[].created:string'];
const ONE = ['id:string', 'name:string', 'slug:string', 'service_count:integer', 'created:string'];
const SDKS = ['go-sdk', 'python-sdk', 'ts-sdk'] as const;

/** A project's environments. */
export const calls: AnclaCall[] = [
  // envs list / completion / init / deploy's environment choice
  { client: 'go-cli', method: 'GET', path: '/api/v1/workspaces/{ws}/projects/{project}/envs/', decodes: LIST, test: TEST },
  // envs create / deploy: a new environment (`{name}`)
  {
    client: 'go-cli',
    method: 'POST',
    path: '/api/v1/workspaces/{ws}/projects/{project}/envs/',
    decodes: ['id:string', 'name:string', 'slug:string'],
    test: TEST,
  },
  // envs get
  {
    client: 'go-cli',
    method: 'GET',
    path: '/api/v1/workspaces/{ws}/projects/{project}/envs/{env}',
    decodes: [...ONE, 'updated:string'],
    test: TEST,
  },
  // deploy: checks the linked environment still exists
  { client: 'go-cli', method: 'GET', path: '/api/v1/workspaces/{ws}/projects/{project}/envs/{env}/', decodes: ['slug:string'], test: TEST },
  ...SDKS.flatMap((client): AnclaCall[] => [
    { client, method: 'GET', path: '/api/v1/workspaces/{ws}/projects/{project}/envs/', decodes: LIST, test: TEST },
    { client, method: 'GET', path: '/api/v1/workspaces/{ws}/projects/{project}/envs/{env}', decodes: ONE, test: TEST },
    { client, method: 'POST', path: '/api/v1/workspaces/{ws}/projects/{project}/envs/', decodes: ONE, test: TEST },
  ]),
];

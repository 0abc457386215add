import type { AnclaCall } from './types.js';

/**
 * The calls Ancla's clients make on a service in an environment, its builds, deploys and
 * configuration, and on an environment's deploys: read from internal/cli/*.go, sdks/go,
 * sdks/python/src/ancla and sdks/typescript/src of SideQuest-Group/ancla-client. `test` names
 * the case of test/ancla-contract/services.test.ts that makes the call as the client does.
 */
export const TESTS = {
  listServices: 'lists the services of an environment',
  createService: 'creates a service (201)',
  getService: 'reads a service',
  updateService: 'updates a service, ignoring fields it does not know',
  scaleService: "scales a service's processes in the environment",
  deployService: 'deploys a service through the real pipeline and follows it to success',
  configOnlyDeploy: 'answers a deploy whose body has fields Slipway does not know',
  failedDeploy: 'records and answers a deploy whose pipeline cannot start (202, error)',
  pipelineStatus: "reads a service's pipeline status in Ancla's words, by slug or by the service's id as the Go SDK sends it",
  listBuilds: 'lists builds as a page of items',
  triggerBuild: 'triggers a build: 202 with build_id and version',
  buildLog: "reads a build's log by version and by id",
  getBuild: 'reads a build by version and by id',
  listDeploys: 'lists deploys: a page for the SDKs, the bare array for Go clients',
  getDeploy: 'reads a deploy at the environment, at the service and by id',
  deployLog: "reads a deploy's log at the environment and by id",
  envDeploy: 'deploys an environment and answers its job_id',
  envDeploys: "lists an environment's deploys",
  listConfig: "lists a service's variables (Ancla's meaning under /api/v1)",
  setConfig: 'sets a service variable (201, then 200)',
  deleteConfig: 'deletes a service variable by id or by name (204)',
  resolvedConfig: "keeps Slipway's resolved view at /v1 and at config/resolved",
  deleteService: 'deletes a service: the whole application, its instances and routes (204)',
} as const;

const S = '/api/v1/workspaces/{ws}/projects/{proj}/envs/{env}/services';
const E = '/api/v1/workspaces/{ws}/projects/{proj}/envs/{env}';
const SERVICE_FIELDS = ['id', 'name', 'slug', 'platform', 'github_repository', 'auto_deploy_branch', 'process_counts'];
const BUILD_FIELDS = ['id', 'version', 'built', 'error', 'created'];
const DEPLOY_FIELDS = ['id', 'complete', 'error', 'error_detail', 'job_id', 'created', 'updated'];
const CONFIG_FIELDS = ['id', 'name', 'value', 'secret', 'buildtime'];
const items = (fields: string[]) => fields.map((f) => `items[].${f}`);
const each = (fields: string[]) => fields.map((f) => `[].${f}`);

const served: AnclaCall[] = [
  // --- Go CLI (internal/cli) ---
  { client: 'go-cli', method: 'GET', path: `${S}/`, decodes: each(['name', 'slug', 'platform']), test: TESTS.listServices },
  {
    client: 'go-cli',
    method: 'GET',
    path: `${S}/{svc}`,
    decodes: ['name', 'slug', 'platform', 'github_repository', 'auto_deploy_branch', 'process_counts'],
    test: TESTS.getService,
  },
  { client: 'go-cli', method: 'POST', path: `${S}/{svc}/deploy`, decodes: ['build_id'], test: TESTS.deployService },
  { client: 'go-cli', method: 'POST', path: `${S}/{svc}/deploy`, decodes: ['deploy_id'], test: TESTS.configOnlyDeploy },
  { client: 'go-cli', method: 'POST', path: `${S}/{svc}/scale`, decodes: [], test: TESTS.scaleService },
  {
    client: 'go-cli',
    method: 'GET',
    path: `${S}/{svc}/builds/`,
    decodes: [...items(BUILD_FIELDS), 'items[].strategy'],
    test: TESTS.listBuilds,
  },
  { client: 'go-cli', method: 'POST', path: `${S}/{svc}/builds/trigger`, decodes: ['build_id', 'version'], test: TESTS.triggerBuild },
  {
    client: 'go-cli',
    method: 'GET',
    path: `${S}/{svc}/builds/{version}/log`,
    decodes: ['status', 'version', 'log_text'],
    test: TESTS.buildLog,
  },
  {
    client: 'go-cli',
    method: 'GET',
    path: `${S}/{svc}/deploys/`,
    decodes: each(['id', 'complete', 'error', 'created']),
    test: TESTS.listDeploys,
  },
  { client: 'go-cli', method: 'GET', path: `${E}/deploys/{id}`, decodes: DEPLOY_FIELDS, test: TESTS.getDeploy },
  { client: 'go-cli', method: 'GET', path: `${E}/deploys/{id}/log`, decodes: ['status', 'log_text'], test: TESTS.deployLog },
  { client: 'go-cli', method: 'GET', path: `${S}/{svc}/config/`, decodes: each(CONFIG_FIELDS), test: TESTS.listConfig },
  { client: 'go-cli', method: 'POST', path: `${S}/{svc}/config/`, decodes: [], test: TESTS.setConfig },
  { client: 'go-cli', method: 'DELETE', path: `${S}/{svc}/config/{id}`, decodes: [], test: TESTS.deleteConfig },

  // --- Go SDK (sdks/go) ---
  { client: 'go-sdk', method: 'GET', path: `${S}/`, decodes: each(SERVICE_FIELDS), test: TESTS.listServices },
  { client: 'go-sdk', method: 'GET', path: `${S}/{svc}`, decodes: SERVICE_FIELDS, test: TESTS.getService },
  { client: 'go-sdk', method: 'POST', path: `${S}/`, decodes: SERVICE_FIELDS, test: TESTS.createService },
  { client: 'go-sdk', method: 'PATCH', path: `${S}/{svc}`, decodes: SERVICE_FIELDS, test: TESTS.updateService },
  { client: 'go-sdk', method: 'POST', path: `${S}/{svc}/deploy`, decodes: ['build_id', 'version'], test: TESTS.deployService },
  { client: 'go-sdk', method: 'POST', path: `${S}/{svc}/scale`, decodes: [], test: TESTS.scaleService },
  {
    client: 'go-sdk',
    method: 'GET',
    path: `${S}/{svc}/pipeline-status`,
    decodes: ['build.status', 'deploy.status'],
    test: TESTS.pipelineStatus,
  },
  { client: 'go-sdk', method: 'GET', path: `${S}/{svc}/builds/`, decodes: items(BUILD_FIELDS), test: TESTS.listBuilds },
  { client: 'go-sdk', method: 'POST', path: `${S}/{svc}/builds/`, decodes: ['build_id', 'version'], test: TESTS.triggerBuild },
  {
    client: 'go-sdk',
    method: 'GET',
    path: `${S}/{svc}/builds/{version}/log`,
    decodes: ['status', 'version', 'log_text'],
    test: TESTS.buildLog,
  },
  { client: 'go-sdk', method: 'GET', path: `${E}/deploys/{id}`, decodes: DEPLOY_FIELDS, test: TESTS.getDeploy },
  { client: 'go-sdk', method: 'GET', path: `${E}/deploys/{id}/log`, decodes: ['status', 'log_text'], test: TESTS.deployLog },
  { client: 'go-sdk', method: 'GET', path: `${S}/{svc}/config/`, decodes: [...each(CONFIG_FIELDS), '[].scope'], test: TESTS.listConfig },
  { client: 'go-sdk', method: 'POST', path: `${S}/{svc}/config/`, decodes: CONFIG_FIELDS, test: TESTS.setConfig },
  { client: 'go-sdk', method: 'DELETE', path: `${S}/{svc}/config/{id}`, decodes: [], test: TESTS.deleteConfig },

  // --- Python SDK (sdks/python/src/ancla) ---
  { client: 'python-sdk', method: 'GET', path: `${S}/`, decodes: each(SERVICE_FIELDS), test: TESTS.listServices },
  { client: 'python-sdk', method: 'GET', path: `${S}/{svc}`, decodes: SERVICE_FIELDS, test: TESTS.getService },
  { client: 'python-sdk', method: 'POST', path: `${S}/`, decodes: SERVICE_FIELDS, test: TESTS.createService },
  { client: 'python-sdk', method: 'PATCH', path: `${S}/{svc}`, decodes: SERVICE_FIELDS, test: TESTS.updateService },
  { client: 'python-sdk', method: 'POST', path: `${S}/{svc}/deploy`, decodes: ['build_id'], test: TESTS.deployService },
  { client: 'python-sdk', method: 'POST', path: `${S}/{svc}/scale`, decodes: [], test: TESTS.scaleService },
  { client: 'python-sdk', method: 'GET', path: `${S}/{svc}/builds/`, decodes: items(BUILD_FIELDS), test: TESTS.listBuilds },
  { client: 'python-sdk', method: 'GET', path: '/api/v1/builds/{id}', decodes: BUILD_FIELDS, test: TESTS.getBuild },
  { client: 'python-sdk', method: 'GET', path: '/api/v1/builds/{id}/log', decodes: ['status', 'log_text'], test: TESTS.buildLog },
  { client: 'python-sdk', method: 'GET', path: `${S}/{svc}/deploys/`, decodes: items(DEPLOY_FIELDS), test: TESTS.listDeploys },
  { client: 'python-sdk', method: 'GET', path: '/api/v1/deploys/{id}/detail', decodes: DEPLOY_FIELDS, test: TESTS.getDeploy },
  { client: 'python-sdk', method: 'GET', path: `${S}/{svc}/config/`, decodes: each(CONFIG_FIELDS), test: TESTS.listConfig },
  { client: 'python-sdk', method: 'POST', path: `${S}/{svc}/config/`, decodes: CONFIG_FIELDS, test: TESTS.setConfig },
  { client: 'python-sdk', method: 'DELETE', path: `${S}/{svc}/config/{name}`, decodes: [], test: TESTS.deleteConfig },

  // --- TypeScript SDK (sdks/typescript/src) ---
  { client: 'ts-sdk', method: 'GET', path: `${S}/`, decodes: each(['id', 'name', 'slug', 'platform']), test: TESTS.listServices },
  { client: 'ts-sdk', method: 'GET', path: `${S}/{svc}`, decodes: SERVICE_FIELDS, test: TESTS.getService },
  { client: 'ts-sdk', method: 'POST', path: `${S}/`, decodes: ['id', 'name', 'slug', 'platform'], test: TESTS.createService },
  { client: 'ts-sdk', method: 'PATCH', path: `${S}/{svc}`, decodes: SERVICE_FIELDS, test: TESTS.updateService },
  { client: 'ts-sdk', method: 'POST', path: `${S}/{svc}/deploy`, decodes: ['build_id'], test: TESTS.deployService },
  { client: 'ts-sdk', method: 'POST', path: `${S}/{svc}/scale`, decodes: [], test: TESTS.scaleService },
  {
    client: 'ts-sdk',
    method: 'GET',
    path: `${S}/{svc}/pipeline-status`,
    decodes: ['build.status', 'deploy.status'],
    test: TESTS.pipelineStatus,
  },
  { client: 'ts-sdk', method: 'GET', path: `${S}/{svc}/builds/`, decodes: items(BUILD_FIELDS), test: TESTS.listBuilds },
  { client: 'ts-sdk', method: 'GET', path: '/api/v1/builds/{id}/log', decodes: BUILD_FIELDS, test: TESTS.buildLog },
  { client: 'ts-sdk', method: 'GET', path: `${S}/{svc}/deploys/`, decodes: items(DEPLOY_FIELDS), test: TESTS.listDeploys },
  { client: 'ts-sdk', method: 'GET', path: '/api/v1/deploys/{id}/detail', decodes: DEPLOY_FIELDS, test: TESTS.getDeploy },
  { client: 'ts-sdk', method: 'GET', path: '/api/v1/deploys/{id}/log', decodes: ['status', 'log_text'], test: TESTS.deployLog },
  { client: 'ts-sdk', method: 'GET', path: `${S}/{svc}/config/`, decodes: each(CONFIG_FIELDS), test: TESTS.listConfig },
  { client: 'ts-sdk', method: 'POST', path: `${S}/{svc}/config/`, decodes: [], test: TESTS.setConfig },
  { client: 'ts-sdk', method: 'DELETE', path: `${S}/{svc}/config/{id}`, decodes: [], test: TESTS.deleteConfig },
  { client: 'go-sdk', method: 'DELETE', path: `${S}/{svc}/`, decodes: [], test: TESTS.deleteService },
  { client: 'python-sdk', method: 'DELETE', path: `${S}/{svc}/`, decodes: [], test: TESTS.deleteService },
  { client: 'ts-sdk', method: 'DELETE', path: `${S}/{svc}/`, decodes: [], test: TESTS.deleteService },
];

/**
 * Calls Slipway does not serve yet, with the reason. The Go SDK's ListDeploys sends exactly the
 * request the Go CLI sends (same path, headers and User-Agent) but decodes a page where the CLI
 * decodes a bare array, so one answer cannot satisfy both: the CLI's (Ancla's openapi.json) wins.
 */
const unserved: AnclaCall[] = [{ client: 'go-sdk', method: 'GET', path: `${S}/{svc}/deploys/`, decodes: items(DEPLOY_FIELDS), test: '' }];

/** `ancla ssh` and `ancla shell` (internal/cli/ssh.go, shell.go): connection details of the SSH gateway, test/ssh. */
const execOverSsh: AnclaCall[] = [
  {
    client: 'go-cli',
    method: 'POST',
    path: `${S}/{svc}/exec`,
    decodes: ['websocket_url:string', 'host:string', 'port:number', 'token:string'],
    test: '../ssh/ssh-gateway.test.ts > runs the Ancla CLI exec through a one-use token: exit codes, a terminal, a used or wrong token refused',
  },
];

export const calls: AnclaCall[] = [
  ...served.map((call) => ({ ...call, test: `services.test.ts > ${call.test}` })),
  ...unserved,
  ...execOverSsh,
];

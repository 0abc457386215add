import { execFile, execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { TestRepo } from '../helpers/git-repo.js';
import { pythonHttpApp } from '../helpers/python-app.js';

/**
 * Ancla's own Python, TypeScript and Go SDKs (their code, not a reading of it) on a service in an environment, against
 * this server over real HTTP: opt-in, as CI has no checkout of the client. Run with
 * `ANCLA_CLIENT_DIR=/path/to/ancla-client` (and `ANCLA_PYTHONPATH` for where httpx and pydantic
 * live, if not in python3's own path). The Go SDK needs `go` on the PATH (Debian's golang-go).
 */
const CLIENT = process.env.ANCLA_CLIENT_DIR;
const SDK = CLIENT ? join(CLIENT, 'sdks/python/src') : '';
const GO = (() => {
  try {
    return execFileSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' }).trim().replace(/^go/, '');
  } catch {
    return null;
  }
})();

/**
 * Builds test/ancla-contract/go-probe against a copy of the SDK. The SDK's code is not touched;
 * its go.mod's `go` line is lowered to the local toolchain's when that is older (Debian's 1.19
 * reads `go 1.24.0` as an error, and the SDK uses nothing newer).
 */
function buildGoProbe(): { binary: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'slipway-ancla-go-'));
  cpSync(join(CLIENT!, 'sdks/go'), join(dir, 'sdk'), { recursive: true });
  const goMod = join(dir, 'sdk/go.mod');
  const [major, minor] = GO!.split('.').map(Number);
  writeFileSync(goMod, readFileSync(goMod, 'utf8').replace(/^go .*$/m, `go ${major}.${minor}`));
  mkdirSync(join(dir, 'probe'));
  cpSync(new URL('./go-probe/main.go', import.meta.url), join(dir, 'probe/main.go'));
  writeFileSync(
    join(dir, 'probe/go.mod'),
    `module probe\n\ngo ${major}.${minor}\n\nrequire github.com/sidequest-labs/ancla-go v0.0.0\n\nreplace github.com/sidequest-labs/ancla-go => ../sdk\n`,
  );
  const env = { ...process.env, GOFLAGS: '-mod=mod', GOPROXY: 'off', GOCACHE: join(dir, 'cache'), GOPATH: join(dir, 'gopath') };
  execFileSync('go', ['build', '-o', join(dir, 'probe-bin'), '.'], { cwd: join(dir, 'probe'), env, stdio: 'pipe' });
  return { binary: join(dir, 'probe-bin'), dir };
}

const SCRIPT = String.raw`
import json, os, sys, time
from ancla import AnclaClient
c = AnclaClient(api_key=os.environ["KEY"], server=os.environ["SERVER"])
ws, proj, env = "acme", "shop", "staging"
done = []
def step(name, value):
    done.append(name)
    return value
svc = step("create_service", c.create_service(ws, proj, env, "web", "wind"))
assert svc.slug == "web", svc
assert [s.slug for s in step("list_services", c.list_services(ws, proj, env))] == ["web"]
svc = step("update_service", c.update_service(ws, proj, env, "web", github_repository=os.environ["REPO"], auto_deploy_branch="main", note="ignored"))
assert svc.github_repository == os.environ["REPO"], svc
assert step("get_service", c.get_service(ws, proj, env, "web")).id == svc.id
var = step("set_config", c.set_config(ws, proj, env, "web", "GREETING", "from python"))
assert var.name == "GREETING" and var.value == "from python", var
assert [v.name for v in step("list_config", c.list_config(ws, proj, env, "web"))] == ["GREETING"]
started = step("deploy_service", c.deploy_service(ws, proj, env, "web"))
assert started.build_id
deadline = time.time() + 180
while True:
    deploys = step("list_deploys", c.list_deploys(ws, proj, env, "web"))
    if deploys and (deploys[0].complete or deploys[0].error):
        break
    assert time.time() < deadline, "deploy did not settle"
    time.sleep(0.5)
assert deploys[0].complete and not deploys[0].error, deploys[0]
builds = step("list_builds", c.list_builds(ws, proj, env, "web"))
assert builds[0].id == started.build_id and builds[0].built, builds
assert step("get_build", c.get_build(started.build_id)).version == builds[0].version
assert step("get_build_log", c.get_build_log(started.build_id)).status == "success"
assert step("get_deploy", c.get_deploy(deploys[0].id)).complete
step("scale_service", c.scale_service(ws, proj, env, "web", {"web": 1}))
step("delete_config", c.delete_config(ws, proj, env, "web", "GREETING"))
assert step("list_config", c.list_config(ws, proj, env, "web")) == []
print(json.dumps(done))
`;

let h: Harness;
let alice: TestUser;
let repo: TestRepo;
let server = '';

describe.skipIf(!CLIENT || !existsSync(SDK))("Ancla's Python and TypeScript SDKs against this server", () => {
  beforeAll(async () => {
    h = await createHarness(
      { ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000, ROUTER_DRAIN_TIMEOUT_MS: 2000 },
      { jobs: true, runtime: true },
    );
    alice = await h.user();
    repo = new TestRepo('slipway-ancla-py-');
    repo.commit({ 'server.py': pythonHttpApp(`os.environ.get('GREETING')`), Procfile: 'web: python3 server.py\n' });
    const v1 = (url: string, payload: object) => h.app.inject({ method: 'POST', url: `/v1${url}`, headers: alice.headers, payload });
    const ws = (await v1('/workspaces', { name: 'Acme' })).json();
    expect((await v1('/projects', { name: 'Shop', organization_id: ws.id })).statusCode).toBe(201);
    expect((await v1('/workspaces/acme/projects/shop/envs', { name: 'staging' })).statusCode).toBe(201);
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    server = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  }, 60_000);

  afterAll(async () => {
    await h?.close();
    repo?.remove();
  });

  it('creates, configures, deploys and reads a service with the SDK unchanged', async () => {
    const { stdout } = await promisify(execFile)('python3', ['-c', SCRIPT], {
      env: {
        ...process.env,
        PYTHONPATH: [SDK, process.env.ANCLA_PYTHONPATH].filter(Boolean).join(':'),
        KEY: alice.apiKey,
        SERVER: server,
        REPO: repo.dir,
      },
      timeout: 240_000,
    });
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toContain('delete_config');
  }, 300_000);

  it.skipIf(!GO)(
    "runs every call of Ancla's Go SDK unchanged; only ListDeploys fails, as documented",
    async () => {
      const probe = buildGoProbe();
      try {
        const { stdout } = await promisify(execFile)(probe.binary, [], {
          env: { ...process.env, KEY: alice.apiKey, SERVER: server, REPO: repo.dir },
          timeout: 240_000,
        });
        const report = JSON.parse(stdout.trim().split('\n').pop()!) as { done: string[]; failed: Record<string, string> };
        // ListDeploys sends the request Ancla's CLI sends, byte for byte, and decodes another shape
        // (docs/ancla-compatibility.md): the CLI's shape is served.
        expect(Object.keys(report.failed), JSON.stringify(report.failed)).toEqual(['ListDeploys']);
        expect(report.failed.ListDeploys).toMatch(/decoding response/);
        expect(report.done).toHaveLength(29);
      } finally {
        rmSync(probe.dir, { recursive: true, force: true });
      }
    },
    300_000,
  );

  it("reads the same service, its builds and deploys with Ancla's TypeScript SDK unchanged", async () => {
    const sdk = join(CLIENT!, 'sdks/typescript/src/client.ts');
    const { AnclaClient } = (await import(/* @vite-ignore */ sdk)) as { AnclaClient: new (o: object) => any };
    const c = new AnclaClient({ apiKey: alice.apiKey, server });
    const [ws, proj, env] = ['acme', 'shop', 'staging'];
    expect((await c.listServices(ws, proj, env)).map((s: { slug: string }) => s.slug)).toEqual(['web']);
    expect(await c.getService(ws, proj, env, 'web')).toMatchObject({
      slug: 'web',
      github_repository: repo.dir,
      process_counts: { web: 1 },
    });
    expect(await c.updateService(ws, proj, env, 'web', { auto_deploy_branch: 'main' })).toMatchObject({ auto_deploy_branch: 'main' });
    const builds = await c.listBuilds(ws, proj, env, 'web');
    expect(builds.items[0]).toMatchObject({ built: true, error: false, version: expect.any(Number) });
    expect(await c.getBuild(builds.items[0].id)).toMatchObject({ id: builds.items[0].id, status: 'success' });
    const deploys = await c.listDeploys(ws, proj, env, 'web');
    expect(deploys.items[0]).toMatchObject({ complete: true, error: false, error_detail: '' });
    expect(await c.getDeploy(deploys.items[0].id)).toMatchObject({ id: deploys.items[0].id, complete: true });
    expect((await c.getDeployLog(deploys.items[0].id)).status).toBe('complete');
    expect(await c.getServiceStatus(ws, proj, env, 'web')).toMatchObject({ build: { status: 'success' }, deploy: { status: 'success' } });
    await c.setConfig(ws, proj, env, 'web', { name: 'TS_SET', value: 'yes', secret: true });
    const vars = await c.listConfig(ws, proj, env, 'web');
    expect(vars).toEqual([expect.objectContaining({ name: 'TS_SET', secret: true })]);
    await c.deleteConfig(ws, proj, env, 'web', vars[0].id);
    expect(await c.listConfig(ws, proj, env, 'web')).toEqual([]);
    await c.scaleService(ws, proj, env, 'web', { web: 1 });
  });
});

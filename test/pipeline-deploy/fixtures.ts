import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { v7 as uuidv7 } from 'uuid';
import { parseProcfile } from '../../src/platform/builder/procfile.js';
import type { Harness, TestUser } from '../helpers/harness.js';
import { routerGet } from '../helpers/router-get.js';
import { seedApplication } from '../helpers/seed.js';
import { waitFor } from '../helpers/wait.js';

/**
 * A small HTTP app in node: answers `<VERSION>:<GREETING>` on `/`, 200 on `/health`;
 * prints its secret (to check scrubbing). `/crash` exits.
 */
export const NODE_APP = (version: string) => `
const http = require('http');
console.log('boot ${version} secret=' + process.env.API_TOKEN);
http.createServer((req, res) => {
  if (req.url === '/crash') { res.end('bye'); setTimeout(() => process.exit(3), 10); return; }
  res.end('${version}:' + process.env.GREETING);
}).listen(Number(process.env.PORT), '127.0.0.1');
`;

export interface Deployable {
  appId: string;
  envId: string;
  slugs: { org: string; project: string; app: string };
  /** Records a built image and a release of these files (as the build and release stages would). */
  release(files: Record<string, string>, procfile: string): Promise<string>;
}

let counter = 0;

/** An organization, project and application, with config `GREETING` (plain) and `API_TOKEN` (secret). */
export async function deployableApp(h: Harness, user: TestUser, settings: Record<string, unknown> = {}): Promise<Deployable> {
  counter++;
  const headers = user.headers;
  const { org, project, app } = await seedApplication(h, user, {
    org: `Org ${counter} ${uuidv7().slice(-6)}`,
    project: 'Shop',
    app: 'Web',
  });
  if (Object.keys(settings).length > 0) {
    const r = await h.app.inject({ method: 'PATCH', url: `/v1/applications/${app.id}/settings`, headers, payload: settings });
    if (r.statusCode !== 200) throw new Error(r.body);
  }
  const env = await h.ctx.db
    .selectFrom('environments')
    .select('id')
    .where('project_id', '=', project.id)
    .where('slug', '=', 'production')
    .executeTakeFirstOrThrow();
  const appRow = await h.ctx.db.selectFrom('applications').selectAll().where('id', '=', app.id).executeTakeFirstOrThrow();
  const config = { GREETING: 'hello', API_TOKEN: 'tok-very-secret-123' };
  let version = 0;
  return {
    appId: app.id,
    envId: env.id,
    slugs: { org: org.slug, project: project.slug, app: app.slug },
    async release(files, procfile) {
      version++;
      const dir = join(h.dataDir, 'images', app.id, String(version));
      mkdirSync(dir, { recursive: true });
      for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
      writeFileSync(join(dir, 'Procfile'), procfile);
      const processes = parseProcfile(procfile);
      const imageId = uuidv7();
      await h.ctx.db
        .insertInto('images')
        .values({
          id: imageId,
          application_id: app.id,
          version,
          status: 'built',
          built: true,
          repository_name: `${org.slug}/${project.slug}/${app.slug}`,
          artifact_path: dir,
          procfile,
          processes: JSON.stringify(processes),
          image_id: `sha256:${'0'.repeat(63)}${version}`,
        })
        .execute();
      const releaseId = uuidv7();
      await h.ctx.db
        .insertInto('releases')
        .values({
          id: releaseId,
          application_id: app.id,
          environment_id: env.id,
          version,
          image_ref: imageId,
          status: 'built',
          built: true,
          configuration: JSON.stringify([
            { name: 'GREETING', value: 'hello', secret: false, buildtime: false, scope: 'application' },
            { name: 'API_TOKEN', value: '**secret**', secret: true, buildtime: false, scope: 'application' },
          ]),
          configuration_sealed: h.ctx.secrets.seal(JSON.stringify({ values: config })),
          processes: JSON.stringify(processes),
          process_counts: JSON.stringify(appRow.process_counts),
          health_check_path: (settings.health_check_path as string) ?? appRow.health_check_path,
          deployment_timeout: (settings.deployment_timeout as number) ?? appRow.deployment_timeout,
        })
        .execute();
      return releaseId;
    },
  };
}

/** Polls a deployment until it is no longer in progress. */
export async function settled(h: Harness, user: TestUser, deploymentId: string, timeoutMs = 30_000) {
  return waitFor(
    `deployment ${deploymentId}`,
    async () => {
      const r = await h.app.inject({ method: 'GET', url: `/v1/deployments/${deploymentId}/detail`, headers: user.headers });
      const d = r.json();
      return d.complete || d.error ? d : null;
    },
    timeoutMs,
  );
}

export interface LoadReport {
  total: number;
  failed: number;
  /** Failure reasons (status or error), for the report. */
  failures: string[];
  /** Response bodies seen, in order of first appearance. */
  bodies: string[];
}

/**
 * Sends GETs through the router from `clients` loops (half on keep-alive connections, half
 * on a new connection each) until `stop` resolves; counts every non-200 or error.
 */
export async function loadDuring(port: number, host: string, stop: Promise<unknown>, clients = 4): Promise<LoadReport> {
  const report: LoadReport = { total: 0, failed: 0, failures: [], bodies: [] };
  const keepAlive = new Agent({ keepAlive: true, maxSockets: clients });
  let done = false;
  void stop.finally(() => {
    done = true;
  });
  const loop = async (i: number) => {
    while (!done) {
      report.total++;
      try {
        const r = await routerGet(port, host, '/', 10_000, i % 2 === 0 ? keepAlive : false);
        if (r.status !== 200) {
          report.failed++;
          report.failures.push(`status ${r.status}: ${r.body.slice(0, 100)}`);
        } else if (!report.bodies.includes(r.body)) report.bodies.push(r.body);
      } catch (err) {
        report.failed++;
        report.failures.push((err as Error).message);
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, i) => loop(i)));
  keepAlive.destroy();
  return report;
}

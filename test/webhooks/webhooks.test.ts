/**
 * Outbound webhooks over HTTP against real PostgreSQL and the real pipeline: a loopback
 * receiver (allowed by WEBHOOK_ALLOW_PRIVATE in this harness) gets signed deliveries of a
 * real deployment's events; a failing receiver is retried and each try is logged;
 * redelivery works; without the setting private addresses are refused.
 */
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postDelivery, RefusedAddress } from '../../src/modules/webhooks/index.js';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { call, expectError, seedWorld } from '../control-plane/fixtures.js';
import { deployableApp, NODE_APP, settled } from '../pipeline-deploy/fixtures.js';

interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A receiver on loopback: records every request; `/fail` answers `failStatus` (500 until changed). */
class Receiver {
  readonly requests: Received[] = [];
  failStatus = 500;
  private server!: Server;
  async start() {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        this.requests.push({ path: req.url ?? '', headers: req.headers, body });
        res.statusCode = req.url === '/fail' ? this.failStatus : 200;
        res.end('thanks');
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
  }
  get url() {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
  at(path: string) {
    return this.requests.filter((r) => r.path === path);
  }
  close() {
    return new Promise<void>((r) => this.server.close(() => r()));
  }
}

let h: Harness;
let alice: TestUser;
const receiver = new Receiver();

beforeAll(async () => {
  await receiver.start();
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 2000,
      WEBHOOK_ALLOW_PRIVATE: true,
      WEBHOOK_MAX_ATTEMPTS: 3,
      WEBHOOK_RETRY_DELAY_SECONDS: 1,
    },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
});
afterAll(async () => {
  await h?.close();
  await receiver.close();
});

const verify = (secret: string, r: Received) =>
  r.headers['x-slipway-signature'] === `sha256=${createHmac('sha256', secret).update(r.body).digest('hex')}`;

describe('outbound webhooks', () => {
  it('delivers signed events of a real deployment, retries a failing receiver, logs each try, and redelivers', async () => {
    const app = await deployableApp(h, alice);
    const base = `/v1/organizations/${app.slugs.org}/webhooks`;
    const ok = await call(h, 'POST', base, alice, { url: `${receiver.url}/ok`, events: ['deployment.started', 'deployment.succeeded'] });
    expect(ok.status, ok.raw).toBe(201);
    expect(ok.body).toMatchObject({ url: `${receiver.url}/ok`, events: ['deployment.started', 'deployment.succeeded'], project: null });
    const secret: string = ok.body.secret;
    expect(secret).toMatch(/^whsec_/);
    const failing = await call(h, 'POST', base, alice, {
      url: `${receiver.url}/fail`,
      events: ['deployment.succeeded'],
      project: app.slugs.project,
    });
    expect(failing.status, failing.raw).toBe(201);

    // The secret is shown once: never listed again, and sealed at rest.
    const list = await call(h, 'GET', base, alice);
    expect(list.status).toBe(200);
    expect(list.body.map((w: { id: string }) => w.id).sort()).toEqual([ok.body.id, failing.body.id].sort());
    expect(list.raw).not.toContain(secret);
    const stored = await h.ctx.db.selectFrom('webhooks').select('secret_sealed').where('id', '=', ok.body.id).executeTakeFirstOrThrow();
    expect(stored.secret_sealed).not.toContain(secret);

    // A real deployment through the pipeline.
    const release = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    const deployed = await call(h, 'POST', `/v1/releases/${release}/deploy`, alice);
    expect(deployed.status, deployed.raw).toBe(202);
    const deploymentId: string = deployed.body.deployment_id;
    expect((await settled(h, alice, deploymentId)).status).toBe('complete');

    const received = await waitFor('both deployment events at the receiver', () =>
      receiver.at('/ok').length >= 2 ? receiver.at('/ok') : null,
    );
    const events = received.map((r) => JSON.parse(r.body));
    // Each delivery is a job of its own, so they may arrive in either order; `occurred_at` orders them (docs/guide.md).
    expect(events.map((e) => e.event).sort()).toEqual(['deployment.started', 'deployment.succeeded']);
    const [started, succeeded] = ['deployment.started', 'deployment.succeeded'].map((name) => events.find((e) => e.event === name));
    expect(Date.parse(started.occurred_at)).toBeLessThanOrEqual(Date.parse(succeeded.occurred_at));
    for (const [i, r] of received.entries()) {
      expect(verify(secret, r), 'the HMAC verifies with the secret shown at creation').toBe(true);
      expect(verify('whsec_wrong', r)).toBe(false);
      expect(r.headers['x-slipway-event']).toBe(events[i].event);
      expect(r.headers['x-slipway-delivery']).toBe(events[i].id);
      expect(r.headers['content-type']).toBe('application/json');
      expect(events[i]).toMatchObject({ data: { application_id: app.appId, subject_id: deploymentId } });
    }
    expect(succeeded.data.status).toBe('complete');

    // The failing receiver: the first try and WEBHOOK_MAX_ATTEMPTS - 1 retries, each in the log.
    const logUrl = `${base}/${failing.body.id}/deliveries`;
    const failed = await waitFor(
      'the failing delivery to give up',
      async () => {
        const r = await call(h, 'GET', logUrl, alice);
        return r.body.items?.[0]?.status === 'failed' ? r.body : null;
      },
      { timeout: 60_000, every: 250 },
    );
    expect(failed.pagination.total).toBe(1);
    const delivery = failed.items[0];
    expect(delivery.event).toBe('deployment.succeeded');
    expect(delivery.attempts.map((a: { response_status: number }) => a.response_status)).toEqual([500, 500, 500]);
    expect(receiver.at('/fail').map((r) => r.headers['x-slipway-delivery'])).toEqual([delivery.id, delivery.id, delivery.id]);

    // Redelivery: same delivery id and payload, its new try logged after the others.
    receiver.failStatus = 204;
    const again = await call(h, 'POST', `${logUrl}/${delivery.id}/redeliver`, alice);
    expect(again.status, again.raw).toBe(202);
    expect(again.body).toMatchObject({ id: delivery.id, status: 'pending' });
    const done = await waitFor('the redelivery to succeed', async () => {
      const r = await call(h, 'GET', logUrl, alice);
      return r.body.items[0].status === 'succeeded' ? r.body.items[0] : null;
    });
    expect(done.attempts.map((a: { response_status: number }) => a.response_status)).toEqual([500, 500, 500, 204]);
    const last = receiver.at('/fail').at(-1)!;
    expect(last.headers['x-slipway-delivery']).toBe(delivery.id);
    expect(verify(secret, last)).toBe(false); // signed with its own webhook's secret, not the other one's
    expect(JSON.parse(last.body)).toEqual(delivery.payload);

    // The delivery log belongs to the organization: another user is refused; a deleted webhook takes its log along.
    const bob = await h.user();
    expectError(await call(h, 'GET', logUrl, bob), 403);
    expect((await call(h, 'DELETE', `${base}/${failing.body.id}`, alice)).status).toBe(200);
    expectError(await call(h, 'GET', logUrl, alice), 404);
  });

  it('refuses bad input with 422 and changes nothing', async () => {
    const w = await seedWorld(h, alice);
    const base = `/v1/organizations/${w.org.slug}/webhooks`;
    expectError(await call(h, 'POST', base, alice, { url: 'ftp://example.com/x', events: ['deployment.succeeded'] }), 422);
    expectError(await call(h, 'POST', base, alice, { url: 'http://user:pw@127.0.0.1/x', events: ['deployment.succeeded'] }), 422);
    expectError(await call(h, 'POST', base, alice, { url: `${receiver.url}/ok`, events: ['no.such.event'] }), 422);
    expectError(await call(h, 'POST', base, alice, { url: `${receiver.url}/ok`, events: [] }), 422);
    expectError(await call(h, 'POST', base, alice, { url: `${receiver.url}/ok`, events: ['scale.changed'], project: 'nope' }), 422);
    expect((await call(h, 'GET', base, alice)).body).toEqual([]);
  });
});

describe('private addresses without WEBHOOK_ALLOW_PRIVATE', () => {
  let strict: Harness;
  beforeAll(async () => {
    strict = await createHarness();
  });
  afterAll(async () => {
    await strict?.close();
  });

  it('refuses loopback and private receivers when saved (422)', async () => {
    const owner = await strict.user();
    const w = await seedWorld(strict, owner);
    const base = `/v1/organizations/${w.org.slug}/webhooks`;
    for (const url of [
      `${receiver.url}/ok`,
      'http://localhost:8080/hook',
      'http://10.1.2.3/hook',
      'http://[::1]/hook',
      'http://169.254.169.254/latest',
    ]) {
      const r = await call(strict, 'POST', base, owner, { url, events: ['deployment.succeeded'] });
      expectError(r, 422);
      expect(r.body.message).toMatch(/public host/);
    }
    expect((await call(strict, 'GET', base, owner)).body).toEqual([]);
  });

  it('checks the address again when delivering (a name re-pointed at loopback reaches nothing)', async () => {
    const before = receiver.requests.length;
    const port = new URL(receiver.url).port;
    for (const url of [`http://localhost:${port}/ok`, `http://127.0.0.1:${port}/ok`]) {
      await expect(postDelivery(url, '{}', {}, { allowPrivate: false, timeoutMs: 2000 })).rejects.toBeInstanceOf(RefusedAddress);
    }
    expect(receiver.requests.length).toBe(before);
    // The same call with the setting reaches it.
    await expect(postDelivery(`http://localhost:${port}/ok`, '{}', {}, { allowPrivate: true, timeoutMs: 2000 })).resolves.toBe(200);
  });
});

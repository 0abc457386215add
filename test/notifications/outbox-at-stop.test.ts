/**
 * An event published while the process stops: the job store stops (lifecycle step 7) before the
 * runtime and the LISTEN connection, so an event published then still wakes the outbox's
 * dispatcher. Its notifications could not be queued, and the dispatcher dropped them under their
 * savepoint and committed the event's removal from the outbox: lost. Now the event waits in the
 * outbox and is sent once a job store runs again.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publishWebhookEvent } from '../../src/platform/webhook-events.js';
import { call, seedWorld } from '../control-plane/fixtures.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';

let h: Harness;
let receiver: Server;
const received: string[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      received.push(body);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  h = await createHarness({ WEBHOOK_ALLOW_PRIVATE: true, WEBHOOK_RETRY_DELAY_SECONDS: 1 }, { jobs: true });
});

afterAll(async () => {
  await h?.close();
  await new Promise((resolve) => receiver.close(resolve));
});

describe('an event published after the job store stopped', () => {
  it('stays in the outbox and is notified once a job store runs again', async () => {
    const world = await seedWorld(h);
    const { port } = receiver.address() as AddressInfo;
    const channel = await call(h, 'POST', `/v1/organizations/${world.org.slug}/notification-channels`, world.owner, {
      kind: 'slack',
      url: `http://127.0.0.1:${port}/slack`,
      events: ['build.failed'],
    });
    expect(channel.status, channel.raw).toBe(201);

    await h.ctx.jobs!.stop();
    // Published as the runtime's shutdown would: the LISTEN connection still wakes the dispatcher.
    await publishWebhookEvent(h.ctx.db, {
      organizationId: world.org.id,
      projectId: world.project.id,
      event: 'build.failed',
      data: { application_id: world.app.id },
    });
    // The dispatcher, woken, took and dropped it within milliseconds: watched for a second, it stays.
    const waiting = () => h.ctx.db.selectFrom('webhook_outbox').select('id').where('organization_id', '=', world.org.id).execute();
    for (const watchUntil = Date.now() + 1000; Date.now() < watchUntil; await new Promise((r) => setTimeout(r, 50)))
      expect(await waiting()).toHaveLength(1);

    // A job store running again (here the same process's; in production the next start) drains the outbox.
    await h.ctx.jobs!.startWorkers();
    await waitFor('the notification', () => received.length > 0);
    expect(received[0]).toContain(world.app.slug);
    expect(h.logs()).not.toContain('notifications of an event dropped');
  });
});

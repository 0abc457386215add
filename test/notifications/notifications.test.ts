/**
 * Slack, Discord and e-mail notification channels over HTTP against real PostgreSQL and the real
 * pipeline: loopback receivers (allowed by WEBHOOK_ALLOW_PRIVATE, as in the webhook tests) get
 * a real deployment's events as Slack blocks and a Discord embed; the test button; a receiver
 * answering 500 then 200 shows the retry in the deliveries; another organization's user is refused.
 * E-mail goes through a loopback SMTP sink (test/helpers/smtp-sink.ts) with a text and an HTML part;
 * a worker crashing in a loop sends `instance.crash_loop` once.
 */
import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { waitFor } from '../helpers/wait.js';
import { call, expectError, seedWorld } from '../control-plane/fixtures.js';
import { slipway } from '../cli/slipway.js';
import { deployableApp, NODE_APP, settled } from '../pipeline-deploy/fixtures.js';
import { mailHeader, mimePart, SmtpSink } from '../helpers/smtp-sink.js';

/** Records every POST by path; `/flaky` answers 500 the first time, then 200. */
class Receiver {
  readonly requests: Array<{ path: string; body: any }> = [];
  private server!: Server;
  async start() {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const path = req.url ?? '';
        const firstFlaky = path.startsWith('/flaky') && this.at(path).length === 0;
        this.requests.push({ path, body: JSON.parse(body) });
        res.statusCode = firstFlaky ? 500 : 200;
        res.end('ok');
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
const sink = new SmtpSink();

beforeAll(async () => {
  await receiver.start();
  await sink.start();
  h = await createHarness(
    {
      ROUTER_HOST: '127.0.0.1',
      ROUTER_PORT: 0,
      RUNTIME_STOP_GRACE_MS: 2000,
      WEBHOOK_ALLOW_PRIVATE: true,
      WEBHOOK_RETRY_DELAY_SECONDS: 1,
      DASHBOARD_URL: 'https://slipway.example.test/',
      SMTP_HOST: '127.0.0.1',
      SMTP_PORT: sink.port,
      SMTP_TLS: 'none',
      SMTP_USER: 'mailer',
      SMTP_PASSWORD: 'smtp-pass-SECRET',
      SMTP_FROM: 'Slipway <slipway@example.test>',
      RUNTIME_RESTART_BACKOFF_MS: 10,
    },
    { jobs: true, runtime: true },
  );
  alice = await h.user();
  await h.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await h?.close();
  await receiver.close();
  await sink.close();
});

const SECRET_PATH = '/services/T000/B000/XXXXsecretTAIL';

describe('notification channels', () => {
  it('sends a real deployment to Slack as blocks and to Discord as an embed, with a test button, retries and a masked URL', async () => {
    const app = await deployableApp(h, alice);
    const base = `/v1/organizations/${app.slugs.org}/notification-channels`;
    const slack = await call(h, 'POST', base, alice, {
      kind: 'slack',
      url: `${receiver.url}/slack${SECRET_PATH}`,
      events: ['deployment.started', 'deployment.succeeded'],
      environments: ['production'],
    });
    expect(slack.status, slack.raw).toBe(201);
    expect(slack.body).toMatchObject({ kind: 'slack', name: 'slack', events: ['deployment.started', 'deployment.succeeded'] });
    expect(slack.body.url).toBe(`${new URL(receiver.url).host}/…TAIL`);
    const discord = await call(h, 'POST', base, alice, {
      kind: 'discord',
      name: 'ops',
      url: `${receiver.url}/discord${SECRET_PATH}`,
      events: ['deployment.succeeded'],
    });
    expect(discord.status, discord.raw).toBe(201);
    const staging = await call(h, 'POST', base, alice, {
      kind: 'slack',
      url: `${receiver.url}/staging`,
      events: ['deployment.succeeded'],
      environments: ['staging'],
    });
    expect(staging.status, staging.raw).toBe(201);
    expectError(await call(h, 'POST', base, alice, { kind: 'slack', url: 'ftp://example.com/x', events: ['build.failed'] }), 422);
    expectError(await call(h, 'POST', base, alice, { kind: 'teams', url: `${receiver.url}/x`, events: ['build.failed'] }), 422);

    // The URL is a credential: never answered in full, sealed at rest.
    const list = await call(h, 'GET', base, alice);
    expect(list.body).toHaveLength(3);
    expect(list.raw).not.toContain('secretTAIL');
    const stored = await h.ctx.db
      .selectFrom('notification_channels')
      .select('url_sealed')
      .where('id', '=', slack.body.id)
      .executeTakeFirstOrThrow();
    expect(stored.url_sealed).not.toContain('secretTAIL');
    const audit = await call(h, 'GET', `/v1/organizations/${app.slugs.org}/audit-log?resource_type=notification_channels`, alice);
    expect(audit.body.items.length).toBeGreaterThanOrEqual(3);
    expect(audit.raw).not.toContain('secretTAIL');

    // A member of another organization sees and changes nothing.
    const bob = await h.user();
    expectError(await call(h, 'GET', base, bob), 403);
    expectError(await call(h, 'POST', `${base}/${slack.body.id}/test`, bob), 403);
    expectError(await call(h, 'DELETE', `${base}/${slack.body.id}`, bob), 403);

    // A real deployment through the pipeline.
    const release = await app.release({ 'app.js': NODE_APP('v1') }, 'web: node app.js\n');
    const deployed = await call(h, 'POST', `/v1/releases/${release}/deploy`, alice);
    expect(deployed.status, deployed.raw).toBe(202);
    expect((await settled(h, alice, deployed.body.deployment_id)).status).toBe('complete');

    const slackPath = `/slack${SECRET_PATH}`;
    const toSlack = await waitFor('both deploy messages at Slack', () =>
      receiver.at(slackPath).length >= 2 ? receiver.at(slackPath) : null,
    );
    const appLink = `https://slipway.example.test/apps/${app.slugs.org}/${app.slugs.project}/${app.slugs.app}`;
    const [started, succeeded] = toSlack.map((r) => r.body);
    expect(started.text).toBe(`Deploy started: ${app.slugs.app} (production)`);
    expect(succeeded.text).toBe(`Deploy succeeded: ${app.slugs.app} (production)`);
    expect(succeeded.blocks[0]).toEqual({ type: 'header', text: { type: 'plain_text', text: succeeded.text, emoji: true } });
    expect(succeeded.blocks[1].type).toBe('section');
    expect(succeeded.blocks[1].fields).toEqual(
      expect.arrayContaining([
        { type: 'mrkdwn', text: `*App*\n${app.slugs.project}/${app.slugs.app}` },
        { type: 'mrkdwn', text: '*Environment*\nproduction' },
        { type: 'mrkdwn', text: '*Release*\nv1' },
        { type: 'mrkdwn', text: `*By*\n${alice.username}` },
      ]),
    );
    const button = succeeded.blocks.find((b: { type: string }) => b.type === 'actions').elements[0];
    expect(button).toMatchObject({ type: 'button', url: appLink });

    const toDiscord = await waitFor('the deploy at Discord', () => receiver.at(`/discord${SECRET_PATH}`)[0] ?? null);
    expect(toDiscord.body.embeds).toHaveLength(1);
    expect(toDiscord.body.embeds[0]).toMatchObject({
      title: `Deploy succeeded: ${app.slugs.app} (production)`,
      url: appLink,
      color: 0x2eb67d,
      timestamp: expect.any(String),
      fields: expect.arrayContaining([
        { name: 'Environment', value: 'production', inline: true },
        { name: 'Release', value: 'v1', inline: true },
        { name: 'By', value: alice.username, inline: true },
      ]),
    });

    // Recorded: each with its attempts. The staging-only channel got nothing (fanned out in the same transaction).
    const log = await call(h, 'GET', `${base}/${slack.body.id}/deliveries`, alice);
    expect(log.body.pagination.total).toBe(2);
    expect(log.body.items.map((d: { event: string }) => d.event).sort()).toEqual(['deployment.started', 'deployment.succeeded']);
    expect((await call(h, 'GET', `${base}/${staging.body.id}/deliveries`, alice)).body.pagination.total).toBe(0);
    expect(receiver.at('/staging')).toHaveLength(0);

    // The test button, on a receiver that fails once: the retry shows in the deliveries.
    const flaky = await call(h, 'POST', base, alice, { kind: 'discord', url: `${receiver.url}/flaky`, events: ['build.failed'] });
    const tested = await call(h, 'POST', `${base}/${flaky.body.id}/test`, alice);
    expect(tested.status, tested.raw).toBe(202);
    expect(tested.body).toMatchObject({ event: 'test', status: 'pending' });
    expect(tested.body.payload.embeds[0].title).toBe(`Test notification: ${app.slugs.org}`);
    const delivered = await waitFor(
      'the test message to succeed on its retry',
      async () => {
        const r = await call(h, 'GET', `${base}/${flaky.body.id}/deliveries`, alice);
        return r.body.items[0]?.status === 'succeeded' ? r.body.items[0] : null;
      },
      { timeout: 30_000, every: 200 },
    );
    expect(delivered.attempts.map((a: { response_status: number }) => a.response_status)).toEqual([500, 200]);
    expect(receiver.at('/flaky')).toHaveLength(2);

    // Deleting a channel takes its log along.
    expect((await call(h, 'DELETE', `${base}/${flaky.body.id}`, alice)).status).toBe(200);
    expectError(await call(h, 'GET', `${base}/${flaky.body.id}/deliveries`, alice), 404);
  });

  it('slipway notifications add, list, test and remove', async () => {
    const { org } = await seedWorld(h, alice);
    const home = mkdtempSync(join(tmpdir(), 'slipway-notify-home-'));
    const { port } = h.app.server.address() as AddressInfo;
    const env = {
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      SLIPWAY_SERVER: `http://127.0.0.1:${port}`,
      SLIPWAY_API_KEY: alice.apiKey,
    };
    const added = await slipway(
      [
        'notifications',
        'add',
        'slack',
        `${receiver.url}/cli${SECRET_PATH}`,
        '--events',
        'build.failed,deployment.failed',
        '--org',
        org.slug,
        '--json',
      ],
      env,
    );
    expect(added.code, added.stderr).toBe(0);
    const channel = JSON.parse(added.stdout);
    expect(channel).toMatchObject({ kind: 'slack', events: ['build.failed', 'deployment.failed'], environments: null });
    const listed = await slipway(['notifications', 'list', '--org', org.slug], env);
    expect(listed.stdout).toContain(channel.id);
    expect(listed.stdout).not.toContain('secretTAIL');
    const tested = await slipway(['notifications', 'test', channel.id, '--org', org.slug], env);
    expect(tested.code, tested.stderr).toBe(0);
    const message = await waitFor('the CLI test message', () => receiver.at(`/cli${SECRET_PATH}`)[0] ?? null);
    expect(message.body.blocks[0].text.text).toBe(`Test notification: ${org.slug}`);
    expect((await slipway(['notifications', 'remove', channel.id, '--org', org.slug], env)).code).toBe(0);
    expect((await call(h, 'GET', `/v1/organizations/${org.slug}/notification-channels`, alice)).body).toEqual([]);
  });

  it('e-mails through SMTP with a text and an HTML part, retries a refusal, and tells a crash loop once', async () => {
    const app = await deployableApp(h, alice);
    const base = `/v1/organizations/${app.slugs.org}/notification-channels`;
    for (const url of ['mailto:not-an-address', 'mailto:a@example.com?cc=b@example.com', 'https://example.com/x'])
      expectError(await call(h, 'POST', base, alice, { kind: 'email', url, events: ['build.failed'] }), 422);
    const email = await call(h, 'POST', base, alice, {
      kind: 'email',
      name: 'on-call',
      url: 'mailto:Ops@Example.com,oncall@example.com',
      events: ['instance.crash_loop', 'instance.oom', 'deployment.succeeded'],
    });
    expect(email.status, email.raw).toBe(201);
    expect(email.body).toMatchObject({ kind: 'email', url: 'mailto:ops@example.com,oncall@example.com' });

    // The test button, refused once by the server (451): retried, then accepted (250).
    sink.rejectNext = 1;
    const tested = await call(h, 'POST', `${base}/${email.body.id}/test`, alice);
    expect(tested.status, tested.raw).toBe(202);
    expect(tested.body.payload.subject).toBe(`[Slipway] Test notification: ${app.slugs.org}`);
    const delivered = await waitFor(
      'the test e-mail to succeed on its retry',
      async () => {
        const r = await call(h, 'GET', `${base}/${email.body.id}/deliveries`, alice);
        return r.body.items[0]?.status === 'succeeded' ? r.body.items[0] : null;
      },
      { timeout: 30_000, every: 200 },
    );
    expect(delivered.attempts.map((a: { response_status: number }) => a.response_status)).toEqual([451, 250]);
    expect(delivered.attempts[0].error).toContain('451');
    expect(sink.mails).toHaveLength(1);
    const [mail] = sink.mails;
    expect(mail!).toMatchObject({ from: 'slipway@example.test', to: ['ops@example.com', 'oncall@example.com'], user: 'mailer' });
    expect(mail!.password).toBe('smtp-pass-SECRET');
    expect(mailHeader(mail!.raw, 'subject')).toBe(`[Slipway] Test notification: ${app.slugs.org}`);
    expect(mailHeader(mail!.raw, 'content-type')).toContain('multipart/alternative');
    expect(mimePart(mail!.raw, 'text/plain')).toContain(`By: ${alice.username}`);
    const html = mimePart(mail!.raw, 'text/html')!;
    expect(html).toContain(`<h2>Test notification: ${app.slugs.org}</h2>`);
    expect(html).toContain(`<a href="https://slipway.example.test/orgs/${app.slugs.org}">Open in Slipway</a>`);
    expect(h.logs()).not.toContain('smtp-pass-SECRET');

    // A worker that exits a second after each start: crashes, each one an `instance.crashed` the channel
    // does not take, then, on the fourth, one `instance.crash_loop` (and no `instance.oom`: it exited).
    const crashing = `setTimeout(() => process.exit(2), 1000);\n`;
    const release = await app.release({ 'app.js': NODE_APP('v1'), 'crash.js': crashing }, 'web: node app.js\nworker: node crash.js\n');
    const deployed = await call(h, 'POST', `/v1/releases/${release}/deploy`, alice);
    expect((await settled(h, alice, deployed.body.deployment_id)).status).toBe('complete');
    const scaled = await call(h, 'POST', `/v1/applications/${app.appId}/scale`, alice, { process_counts: { worker: 1 } });
    expect(scaled.status, scaled.raw).toBeLessThan(300);
    const loop = await waitFor(
      'the crash-loop e-mail',
      () => sink.mails.find((m) => mailHeader(m.raw, 'subject')?.includes('Crash loop')),
      {
        timeout: 40_000,
        every: 200,
      },
    );
    expect(mailHeader(loop.raw, 'subject')).toBe(`[Slipway] Crash loop: ${app.slugs.app} (production)`);
    expect(mimePart(loop.raw, 'text/plain')).toContain('Environment: production');
    const events = (await call(h, 'GET', `${base}/${email.body.id}/deliveries`, alice)).body.items.map((d: { event: string }) => d.event);
    expect(events.sort()).toEqual(['deployment.succeeded', 'instance.crash_loop', 'test']);
  });
});

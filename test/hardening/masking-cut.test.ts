/**
 * Issue 20, "masking bypass at the 16 KiB line cut": a release command writes a line of
 * 16,379 characters and then a secret in two writes, so the first half arrives before the
 * line is cut. Both halves must stay hidden in the deploy log read through the API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness, type TestUser } from '../helpers/harness.js';
import { deployableApp, settled } from '../pipeline-deploy/fixtures.js';

let h: Harness;
let alice: TestUser;

beforeAll(async () => {
  h = await createHarness({ ROUTER_HOST: '127.0.0.1', ROUTER_PORT: 0, RUNTIME_STOP_GRACE_MS: 2000 }, { jobs: true, runtime: true });
  alice = await h.user();
});
afterAll(async () => {
  await h?.close();
});

// The fixture's secret API_TOKEN is 'tok-very-secret-123'; it is split after 'tok-very-s'.
const LEAK = `
const token = process.env.API_TOKEN;
process.stdout.write('x'.repeat(16379) + token.slice(0, 10));
setTimeout(() => { process.stdout.write(token.slice(10) + ' done\\n'); process.exit(7); }, 300);
`;

describe('scrubbing across the line cut', () => {
  it('a secret split across the 16 KiB cut is masked in the deploy log', async () => {
    const app = await deployableApp(h, alice);
    const rel = await app.release(
      { 'app.js': 'setInterval(() => {}, 1000);', 'leak.js': LEAK },
      'web: node app.js\nrelease: node leak.js\n',
    );
    const res = await h.app.inject({ method: 'POST', url: `/v1/releases/${rel}/deploy`, headers: alice.headers });
    expect(res.statusCode, res.body).toBe(202);
    const d = await settled(h, alice, res.json().deployment_id);
    expect(d).toMatchObject({ error: true });
    expect(d.deploy_log).toContain('x'.repeat(1000));
    expect(d.deploy_log).not.toContain('tok-very-s');
    expect(d.deploy_log).not.toContain('ecret-123');
    expect(d.deploy_log).toContain('**secret**');
  });
});

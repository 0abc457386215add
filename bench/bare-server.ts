/**
 * The baseline: a bare Fastify route answering a small JSON object, with the same logger
 * level as the app, so ratios show what Slipway adds (auth, database, serialization).
 * Prints `listening <url>` on stdout.
 */
import Fastify from 'fastify';

const level = process.env.LOG_LEVEL ?? 'info';
const app = Fastify({ logger: level === 'silent' ? false : { level } });
app.get('/bare', async () => ({ id: '0190b6a4-7c3e-7000-8000-000000000000', name: 'bare', ok: true }));
const url = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`listening ${url}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));

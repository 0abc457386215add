import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { WebSocketServer, type WebSocket } from 'ws';
import { AppError } from '../errors.js';
import type { App } from './types.js';

/** The socket and first bytes of an upgrade request, kept for the route that accepts it. */
const upgrades = new WeakMap<IncomingMessage, { socket: Duplex; head: Buffer }>();

/**
 * Sends WebSocket upgrade requests whose path matches `paths` through Fastify's router like any
 * request (authentication, scoped keys, rate limits and the route's own checks run first), with
 * a response bound to the socket: a refusal is an ordinary HTTP answer. The route then calls
 * `acceptWebSocket`. Other upgrades are refused.
 */
export function routeWebSocketUpgrades(app: App, paths: RegExp): void {
  const open = new Set<Duplex>();
  // Closing the server ends its WebSockets (their sessions end with them) instead of waiting for them.
  app.addHook('preClose', async () => {
    for (const socket of open) socket.destroy();
  });
  app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (request.url ?? '').split('?')[0]!;
    if (!paths.test(path)) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    upgrades.set(request, { socket, head });
    socket.on('error', () => {});
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    const response = new ServerResponse(request);
    // A refusal is the connection's only answer: closed after it, never kept alive for more requests.
    response.shouldKeepAlive = false;
    response.assignSocket(socket as never);
    response.once('finish', () => socket.end());
    app.routing(request, response);
  });
}

/** Throws 400 unless the request is a WebSocket upgrade (checked before the route changes anything). */
export function requireWebSocketUpgrade(request: FastifyRequest): void {
  if (!upgrades.has(request.raw)) throw new AppError('BAD_REQUEST', 'This route speaks WebSocket only: send an upgrade request');
}

/**
 * Completes the upgrade of the request this route answers: Fastify lets go of the reply. Throws
 * 400 when the request is not a WebSocket upgrade.
 */
export function acceptWebSocket(request: FastifyRequest, reply: FastifyReply, maxPayload: number): Promise<WebSocket> {
  const upgrade = upgrades.get(request.raw);
  if (!upgrade) throw new AppError('BAD_REQUEST', 'This route speaks WebSocket only: send an upgrade request');
  upgrades.delete(request.raw);
  reply.hijack();
  const server = new WebSocketServer({ noServer: true, maxPayload });
  return new Promise((resolve) => server.handleUpgrade(request.raw, upgrade.socket, upgrade.head, (ws) => resolve(ws)));
}

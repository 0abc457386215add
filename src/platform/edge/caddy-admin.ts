import { statSync } from 'node:fs';
import { dirname } from 'node:path';
import { Agent } from 'undici';

/**
 * Where Caddy's admin API is, from `CADDY_ADMIN_URL`: a unix socket (`unix//path/to/admin.sock`,
 * Caddy's own spelling) or an HTTP address (`http://127.0.0.1:2019`).
 */
export interface CaddyAdminEndpoint {
  /** What requests are sent to: on a socket, `http://localhost` (the Host Caddy's `origins localhost` admits). */
  base: string;
  /** No keep-alive (Caddy restarts its admin endpoint on every load); dials the socket when there is one. */
  dispatcher: Agent;
  /** Caddy's `admin.listen` for this endpoint (kept in every configuration the platform loads). */
  listen: string;
  /** The socket's path, or null on TCP. */
  socketPath: string | null;
}

const UNIX_PREFIX = 'unix/';

export function caddyAdminEndpoint(address: string): CaddyAdminEndpoint {
  if (address.startsWith(UNIX_PREFIX)) {
    const socketPath = address.slice(UNIX_PREFIX.length);
    if (!socketPath.startsWith('/')) throw new Error(`CADDY_ADMIN_URL ${address}: a socket is written unix//absolute/path`);
    return {
      base: 'http://localhost',
      dispatcher: new Agent({ pipelining: 0, connect: { socketPath } }),
      listen: address,
      socketPath,
    };
  }
  const url = new URL(address);
  return { base: url.origin, dispatcher: new Agent({ pipelining: 0 }), listen: url.host, socketPath: null };
}

/** Why a CADDY_ADMIN_URL on TCP is refused unless CADDY_ADMIN_ALLOW_TCP=true (issue 27). */
export function caddyAdminOnTcpMessage(address: string): string {
  return (
    `CADDY_ADMIN_URL ${address} is a TCP address: every process on the host that can reach it (tenant code on the host's ` +
    'loopback included) can rewrite every route and make Caddy serve files of the host. Give Caddy an admin socket in a ' +
    'directory only it and the platform can open (admin unix//run/slipway-caddy/admin.sock, directory 0700; docs/operations.md "The edge: drivers and the edge role") ' +
    'and set CADDY_ADMIN_URL=unix//run/slipway-caddy/admin.sock, or set CADDY_ADMIN_ALLOW_TCP=true to accept the risk'
  );
}

/**
 * Refuses an admin socket other users can connect to: connecting needs write permission on the
 * socket and search permission on its directory, so either being closed to group and others is
 * enough.
 */
export function checkAdminSocketPrivate(socketPath: string): void {
  const socket = statSync(socketPath);
  const directory = statSync(dirname(socketPath));
  if ((socket.mode & 0o022) !== 0 && (directory.mode & 0o011) !== 0)
    throw new Error(
      `Caddy's admin socket ${socketPath} can be opened by other users of the host (socket mode ${mode(socket.mode)}, ` +
        `directory mode ${mode(directory.mode)}): give its directory mode 0700`,
    );
}

function mode(m: number): string {
  return `0${(m & 0o777).toString(8)}`;
}

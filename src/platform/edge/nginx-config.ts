import type { MaintenanceWindow } from './maintenance-page.js';
import { maintenancePage } from './maintenance-page.js';

/** One route as nginx serves it: its names, its ready instances, or the answer it gives instead. */
export interface NginxRoute {
  /** The platform host name: the route's key in the access log. */
  host: string;
  /** Names served plainly over HTTP (the platform name and custom domains not redirected to HTTPS). */
  names: string[];
  upstreams: Array<{ host: string; port: number }>;
  maintenance?: { window: MaintenanceWindow; applicationId: string | undefined };
}

/** A custom domain with a certificate the platform issued, served over HTTPS. */
export interface NginxTlsName {
  hostname: string;
  routeHost: string;
  /** One file: the certificate chain, then its key (written 0600 by the platform). */
  pemFile: string;
  hsts: boolean;
}

export interface NginxConfigInput {
  /** The platform's directory for nginx: pid, logs and temporary files. */
  dir: string;
  /** Workers' user (the `user` directive) when the master runs as root; null otherwise. */
  workerUser: string | null;
  listenHost: string;
  port: number;
  httpsPort: number | null;
  /** The platform's loopback responder for ACME challenges and ownership tokens. */
  responderPort: number;
  routes: NginxRoute[];
  /** Custom domains whose plain HTTP answers 308 to HTTPS: hostname → route host. */
  redirects: Array<{ hostname: string; routeHost: string }>;
  tls: NginxTlsName[];
  /** Each request's method, client and URI in the access log too (for the edge's per-request line at debug). */
  logRequests?: boolean;
}

/**
 * The access log's line: the route the server block is (never the client's Host; `-` or empty for none), the status
 * and the seconds it took, separated by spaces. Plain text, not JSON: nginx formats three short fields and the
 * platform splits them without a parser. With the per-request log line on (LOG_LEVEL debug or trace), the method,
 * the client's address and the URI follow (the URI last: it is the one field that is not a token). nginx's default
 * escaping writes `"`, `\` and every byte below 32 or above 126 as `\xHH`, so a line is ASCII and has no newline.
 */
export const ACCESS_LOG_FORMAT = '$slipway_route $status $request_time';
export const ACCESS_LOG_FORMAT_WITH_REQUEST = `${ACCESS_LOG_FORMAT} $request_method $remote_addr $request_uri`;

const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const HOSTNAME = new RegExp(`^(?=.{1,253}$)${LABEL}(?:\\.${LABEL})*$`);
const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)$/;
const IPV6 = /^[0-9a-f:]+$/i;

/**
 * Whether a host name may enter nginx's configuration: lower-case DNS labels only. The API
 * validates names already; this second check keeps anything else (quotes, `$`, spaces,
 * braces, `;`) out of the file whatever a row in the database holds.
 */
export const isSafeHostname = (name: string) => HOSTNAME.test(name);

/** An instance's address as `proxy_pass`'s upstream takes it, or null when it is not a plain address and port. */
export function upstreamAddress(host: string, port: number): string | null {
  if (!Number.isInteger(port) || port < 1 || port > 65535) return null;
  if (IPV4.test(host) || isSafeHostname(host)) return `${host}:${port}`;
  if (host.includes(':') && IPV6.test(host)) return `[${host}]:${port}`;
  return null;
}

/**
 * A double-quoted nginx string. nginx expands `$name` inside quotes and has no escape for `$`:
 * text with one is refused here (callers pass names checked above, or pages whose `$` became `&#36;`).
 */
export function quoted(text: string): string {
  if (text.includes('$')) throw new Error('a string with $ cannot enter the nginx configuration');
  return `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** nginx refuses a single value longer than 4,096 bytes (and then the whole configuration, every tenant's routes). */
const MAX_NGINX_VALUE_BYTES = 4000;

/**
 * The maintenance page for nginx: the shared page, its `$` as an HTML entity (nginx would expand it). A message
 * that escapes to more than nginx takes in one value falls back to the default page rather than break the file.
 */
export function nginxMaintenancePage(window: MaintenanceWindow, applicationId: string | undefined): string {
  const page = maintenancePage(window, applicationId).replace(/\$/g, '&#36;');
  if (Buffer.byteLength(quoted(page)) <= MAX_NGINX_VALUE_BYTES) return page;
  return maintenancePage({ ...window, message: null }, applicationId).replace(/\$/g, '&#36;');
}

const json = (status: number, message: string) => quoted(JSON.stringify({ status, message }));

/** The whole nginx.conf for the current routes, domains and certificates. */
export function renderNginxConfig(input: NginxConfigInput): string {
  const { dir, listenHost } = input;
  // An IPv6 address is bracketed (`listen ::1:8081` is not an address nginx reads).
  const listen = (port: number) =>
    listenHost === '0.0.0.0' || listenHost === ''
      ? `${port}`
      : listenHost.includes(':')
        ? `[${listenHost}]:${port}`
        : `${listenHost}:${port}`;
  const lines: string[] = [
    '# Written by Slipway (the edge driver for nginx); replaced whole on every route change.',
    'daemon on;',
    'worker_processes auto;',
    // Old workers kept by long requests (WebSockets, streams) after a reload end after this.
    'worker_shutdown_timeout 120s;',
    ...(input.workerUser ? [`user ${input.workerUser};`] : []),
    `pid ${quoted(`${dir}/nginx.pid`)};`,
    `error_log ${quoted(`${dir}/error.log`)} warn;`,
    'events { worker_connections 4096; }',
    'http {',
    '  server_tokens off;',
    // Route and domain names up to 253 characters (the default bucket, 64, refuses names of 48 or more).
    '  server_names_hash_bucket_size 512;',
    '  server_names_hash_max_size 65536;',
    `  log_format slipway '${input.logRequests ? ACCESS_LOG_FORMAT_WITH_REQUEST : ACCESS_LOG_FORMAT}';`,
    // Buffered: one write per 64 KiB (about 2,000 requests) or per second, not one per request.
    `  access_log ${quoted(`${dir}/access.log`)} slipway buffer=64k flush=1s;`,
    `  client_body_temp_path ${quoted(`${dir}/tmp/body`)};`,
    `  proxy_temp_path ${quoted(`${dir}/tmp/proxy`)};`,
    // Unused, but nginx creates them at start: in the platform's directory, not /var/lib/nginx.
    `  fastcgi_temp_path ${quoted(`${dir}/tmp/fastcgi`)};`,
    `  uwsgi_temp_path ${quoted(`${dir}/tmp/uwsgi`)};`,
    `  scgi_temp_path ${quoted(`${dir}/tmp/scgi`)};`,
    // Bodies and answers stream through (as the built-in edge does): nothing is written to disk.
    '  client_max_body_size 0;',
    '  proxy_request_buffering off;',
    '  proxy_buffering off;',
    '  proxy_max_temp_file_size 0;',
    '  proxy_read_timeout 1h;',
    '  proxy_send_timeout 1h;',
    '  proxy_http_version 1.1;',
    '  map $http_upgrade $slipway_connection { default upgrade; "" ""; }',
    '  proxy_set_header Host $http_host;',
    '  proxy_set_header Upgrade $http_upgrade;',
    // Empty unless upgrading: upstream connections stay open for the next request (keepalive).
    '  proxy_set_header Connection $slipway_connection;',
    '  proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;',
    '  proxy_set_header X-Forwarded-Proto $scheme;',
    '  proxy_set_header X-Forwarded-Host $http_host;',
    // A refused connection (an instance that just stopped) goes to the route's next instance.
    '  proxy_next_upstream error timeout;',
    '  proxy_connect_timeout 5s;',
    '  error_page 502 504 @slipway_bad_gateway;',
  ];
  // Challenges and ownership tokens are the platform's requests, not the application's: never counted.
  const challenges = [
    `    location /.well-known/acme-challenge/ { access_log off; proxy_pass http://127.0.0.1:${input.responderPort}; }`,
    `    location /.well-known/slipway-domain/ { access_log off; proxy_pass http://127.0.0.1:${input.responderPort}; }`,
  ];
  const badGateway = `    location @slipway_bad_gateway { default_type application/json; return 502 ${json(502, 'The application did not answer')}; }`;
  const routeLocation = (route: NginxRoute, index: number): string[] => {
    if (route.maintenance) {
      const { window, applicationId } = route.maintenance;
      return [
        '    location / {',
        `      add_header Retry-After ${Math.max(0, Math.floor(window.retryAfter))} always;`,
        '      add_header Cache-Control no-store always;',
        '      default_type "text/html; charset=utf-8";',
        `      return 503 ${quoted(nginxMaintenancePage(window, applicationId))};`,
        '    }',
      ];
    }
    if (route.upstreams.length === 0)
      return [
        '    location / {',
        '      add_header Retry-After 1 always;',
        '      default_type application/json;',
        `      return 503 ${json(503, 'The application has no healthy instance right now; retry shortly')};`,
        '    }',
      ];
    return [`    location / { proxy_pass http://slipway_${index}; }`];
  };

  input.routes.forEach((route, index) => {
    if (route.upstreams.length === 0 || route.maintenance) return;
    lines.push(`  upstream slipway_${index} {`);
    for (const u of route.upstreams) lines.push(`    server ${upstreamAddress(u.host, u.port)} max_fails=0;`);
    lines.push('    keepalive 64;', '  }');
  });

  // Plain HTTP: an unknown name is 404 (challenges still answered: a domain is verified before it is routed).
  lines.push(
    '  server {',
    `    listen ${listen(input.port)} default_server;`,
    '    server_name _;',
    '    set $slipway_route "";',
    ...challenges,
    `    location / { default_type application/json; return 404 ${json(404, 'No application is served at this address')}; }`,
    '  }',
  );
  input.routes.forEach((route, index) => {
    if (route.names.length === 0) return;
    lines.push(
      '  server {',
      `    listen ${listen(input.port)};`,
      `    server_name ${route.names.map(quoted).join(' ')};`,
      `    set $slipway_route ${quoted(route.host)};`,
      ...challenges,
      ...routeLocation(route, index),
      badGateway,
      '  }',
    );
  });
  if (input.httpsPort !== null) {
    const httpsSuffix = input.httpsPort === 443 ? '' : `:${input.httpsPort}`;
    for (const r of input.redirects)
      lines.push(
        '  server {',
        `    listen ${listen(input.port)};`,
        `    server_name ${quoted(r.hostname)};`,
        `    set $slipway_route ${quoted(r.routeHost)};`,
        ...challenges,
        `    location / { return 308 https://$host${httpsSuffix}$request_uri; }`,
        '  }',
      );
    if (input.tls.length) {
      // A name without a certificate here gets no handshake (rather than another domain's certificate).
      lines.push('  server {', `    listen ${listen(input.httpsPort)} ssl default_server;`, '    ssl_reject_handshake on;', '  }');
      const indexOf = new Map(input.routes.map((r, i) => [r.host, i]));
      for (const t of input.tls) {
        const index = indexOf.get(t.routeHost);
        if (index === undefined) continue;
        lines.push(
          '  server {',
          `    listen ${listen(input.httpsPort)} ssl;`,
          `    server_name ${quoted(t.hostname)};`,
          `    ssl_certificate ${quoted(t.pemFile)};`,
          `    ssl_certificate_key ${quoted(t.pemFile)};`,
          `    set $slipway_route ${quoted(t.routeHost)};`,
          ...(t.hsts ? ['    add_header Strict-Transport-Security "max-age=31536000" always;'] : []),
          ...routeLocation(input.routes[index]!, index),
          badGateway,
          '  }',
        );
      }
    }
  }
  lines.push('}', '');
  return lines.join('\n');
}

import type { ServerResponse } from 'node:http';

/** An environment in maintenance as the edge serves it (loaded from `environment_maintenance`, kept in the snapshot). */
export interface MaintenanceWindow {
  environmentId: string;
  /** Tenant text (already bounded by the API): escaped before it reaches the page. */
  message: string | null;
  retryAfter: number;
  /** Names of the environment's applications by id, for the default page. */
  applications: Record<string, string>;
}

// Braces too: Caddy expands `{placeholders}` (`{env.X}`, request headers) in a static response's body.
const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '{': '&#123;',
  '}': '&#125;',
};
export const escapeHtml = (text: string) => text.replace(/[&<>"'{}]/g, (c) => ESCAPES[c]!);

/** The page: the operator's message, or a short default naming the application. */
export function maintenancePage(window: MaintenanceWindow, applicationId: string | undefined): string {
  const name = (applicationId && window.applications[applicationId]) || 'This application';
  const text = window.message ?? `${name} is down for maintenance. Please try again shortly.`;
  return (
    '<!doctype html>\n<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">' +
    `<title>${escapeHtml(name)}: maintenance</title></head>\n<body><main><h1>Down for maintenance</h1>\n` +
    `<p>${escapeHtml(text)}</p></main></body></html>\n`
  );
}

/** The same answer as a Caddy handler (the page has no raw braces, so Caddy expands nothing in it). */
export function maintenanceHandler(window: MaintenanceWindow, applicationId: string | undefined) {
  return {
    handler: 'static_response',
    status_code: 503,
    headers: { 'Content-Type': ['text/html; charset=utf-8'], 'Retry-After': [String(window.retryAfter)], 'Cache-Control': ['no-store'] },
    body: maintenancePage(window, applicationId),
  };
}

/** Answers 503 with the page and `Retry-After`, without touching the instances. */
export function answerMaintenance(res: ServerResponse, window: MaintenanceWindow, applicationId: string | undefined, head: boolean) {
  const body = maintenancePage(window, applicationId);
  res.writeHead(503, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'retry-after': String(window.retryAfter),
    'cache-control': 'no-store',
  });
  res.end(head ? undefined : body);
}

import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { workerMark } from '../jobs/orphan-processes.js';
import { PLATFORM_GIT_ENV, pushRepositoriesRoot } from './push-repository.js';

/** Most bytes of CGI headers git http-backend may print before its body. */
const MAX_CGI_HEADER_BYTES = 16 * 1024;

export interface HttpBackendRequest {
  dataDir: string;
  /** `/<application id>.git/info/refs` or `/<application id>.git/git-receive-pack`. */
  pathInfo: string;
  method: 'GET' | 'POST';
  query: string;
  contentType?: string;
  /** The (decompressed) request body, spooled to a file of the platform's. */
  bodyFile?: string;
  bodyBytes?: number;
  remoteUser: string;
  timeoutMs: number;
  /** The CGI status and headers, once git printed them. */
  onHeaders: (status: number, headers: Record<string, string>) => void;
  /** Body bytes as they come. */
  onBody: (chunk: Buffer) => void;
}

/**
 * Runs Git's own smart-HTTP server (`git http-backend`, a CGI program) on the platform's
 * repositories: no system or user configuration, the request body from a bounded spool
 * file, killed (its whole process group) after `timeoutMs`. Resolves with its exit code.
 */
export function runHttpBackend(req: HttpBackendRequest): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['http-backend'], {
      env: {
        ...PLATFORM_GIT_ENV,
        ...workerMark(),
        GIT_PROJECT_ROOT: pushRepositoriesRoot(req.dataDir),
        GIT_HTTP_EXPORT_ALL: '1',
        GIT_HTTP_MAX_REQUEST_BUFFER: String(1024 * 1024),
        PATH_INFO: req.pathInfo,
        REQUEST_METHOD: req.method,
        QUERY_STRING: req.query,
        REMOTE_USER: req.remoteUser,
        REMOTE_ADDR: '127.0.0.1',
        GATEWAY_INTERFACE: 'CGI/1.1',
        ...(req.contentType ? { CONTENT_TYPE: req.contentType } : {}),
        ...(req.bodyBytes !== undefined ? { CONTENT_LENGTH: String(req.bodyBytes) } : {}),
      },
      stdio: [req.bodyFile ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const kill = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    };
    const timer = setTimeout(kill, req.timeoutMs);
    if (req.bodyFile) {
      const body = createReadStream(req.bodyFile);
      body.on('error', kill);
      child.stdin!.on('error', () => {}); // git may stop reading early (a refused pack): its exit code says why
      body.pipe(child.stdin!);
    }
    child.stderr!.resume(); // its messages reach the client through the protocol; none is kept
    let head: Buffer | null = Buffer.alloc(0);
    child.stdout!.on('data', (chunk: Buffer) => {
      if (head === null) return req.onBody(chunk);
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n') >= 0 ? head.indexOf('\r\n\r\n') + 4 : head.indexOf('\n\n') >= 0 ? head.indexOf('\n\n') + 2 : -1;
      if (end < 0) {
        if (head.length > MAX_CGI_HEADER_BYTES) kill();
        return;
      }
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, end).toString('latin1').split(/\r?\n/)) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const rest = head.subarray(end);
      head = null;
      req.onHeaders(parseInt(headers.status ?? '200', 10) || 200, headers);
      if (rest.length) req.onBody(rest);
    });
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

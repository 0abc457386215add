import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import aws4 from 'aws4';
import S3rver from 's3rver';

/**
 * A test S3 store: s3rver behind a front that checks every request's SigV4 signature with an
 * implementation independent of the platform's (aws4, not the AWS SDK) and answers 403
 * SignatureDoesNotMatch otherwise (s3rver itself accepts a wrong secret). `secret` may be changed
 * to make the platform's requests fail as with a wrong key.
 */
export interface TestS3 {
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secret: string;
  /** The object keys below `prefix`, as the store lists them (read directly from s3rver, signed). */
  keys(prefix: string): Promise<string[]>;
  /** Requests the front refused. */
  refused: number;
  close(): Promise<void>;
}

export async function startTestS3(bucket = 'backups', region = 'us-east-1'): Promise<TestS3> {
  const directory = mkdtempSync(join(tmpdir(), 'slipway-s3-'));
  const backend = new S3rver({ port: 0, address: '127.0.0.1', directory, silent: true, configureBuckets: [{ name: bucket }] });
  const { port: backendPort } = await backend.run();
  const s3: TestS3 = {
    endpoint: '',
    bucket,
    // s3rver knows this access key only (and checks no secret: the front does).
    accessKeyId: 'S3RVER',
    secret: 'test-secret-b2f0c9d1e7a34a8c',
    refused: 0,
    keys: async (prefix) => {
      const path = `/${bucket}?list-type=2&prefix=${encodeURIComponent(prefix)}`;
      const signed = aws4.sign(
        { host: `127.0.0.1:${backendPort}`, method: 'GET', path, service: 's3', region },
        { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secret },
      );
      const res = await fetch(`http://127.0.0.1:${backendPort}${path}`, { headers: signed.headers });
      return [...(await res.text()).matchAll(/<Key>([^<]+)<\/Key>/g)].map((m) => m[1]!).sort();
    },
    close: async () => {
      await new Promise((resolve) => front.close(resolve));
      await backend.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };

  const front: Server = createServer((req, res) => {
    if (!signatureValid(req, s3, region)) {
      s3.refused++;
      req.resume();
      const body =
        '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SignatureDoesNotMatch</Code>' +
        '<Message>The request signature we calculated does not match the signature you provided.</Message></Error>';
      res.writeHead(403, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
      return res.end(body);
    }
    const forward = request({ host: '127.0.0.1', port: backendPort, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
  const address = front.address();
  s3.endpoint = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return s3;
}

/** Recomputes the request's signature from the headers it says it signed, with the store's secret. */
function signatureValid(req: IncomingMessage, s3: TestS3, region: string): boolean {
  const auth = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/[^,]+, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(
    req.headers.authorization ?? '',
  );
  if (!auth || auth[1] !== s3.accessKeyId) return false;
  const headers: Record<string, string> = {};
  for (const name of auth[2]!.split(';')) {
    const value = req.headers[name];
    if (value === undefined) return false;
    headers[name] = Array.isArray(value) ? value.join(',') : value;
  }
  const signed = aws4.sign(
    { host: req.headers.host, method: req.method, path: req.url, service: 's3', region, headers },
    { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secret },
  );
  return /Signature=([0-9a-f]{64})/.exec(signed.headers.Authorization ?? '')?.[1] === auth[3];
}

import { mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import aws4 from 'aws4';
import S3rver from 's3rver';

/**
 * A test S3 store: s3rver behind a front that checks every request's SigV4 signature with an
 * implementation independent of the platform's (aws4, not the AWS SDK) and answers 403
 * SignatureDoesNotMatch otherwise (s3rver itself accepts a wrong secret). `secret` may be changed
 * to make the platform's requests fail as with a wrong key. The front also answers a listing with a
 * delimiter itself, as S3 does (CommonPrefixes): s3rver 3.7 never descends below a would-be common
 * prefix, so it answers none for keys two levels down.
 */
export interface TestS3 {
  endpoint: string;
  bucket: string;
  accessKeyId: string;
  secret: string;
  /** The object keys below `prefix`, as the store lists them (read directly from s3rver, signed). */
  keys(prefix: string): Promise<string[]>;
  /** The objects below `prefix` with their sizes in bytes. */
  sizes(prefix: string): Promise<Record<string, number>>;
  /** Writes an object directly to s3rver (signed), as another add-on or another tool of the bucket's owner would. */
  put(key: string, body: string): Promise<void>;
  /** Makes the objects look `days` old (their LastModified, which s3rver reads from the file's mtime). */
  age(keys: string[], days: number): void;
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
    keys: async (prefix) => (await listAll(prefix)).map((o) => o.key).sort(),
    sizes: async (prefix) => Object.fromEntries((await listAll(prefix)).map((o) => [o.key, Number(o.size)])),
    put: async (key, body) => {
      const path = `/${bucket}/${key.split('/').map(encodeURIComponent).join('/')}`;
      const signed = aws4.sign(
        {
          host: `127.0.0.1:${backendPort}`,
          method: 'PUT',
          path,
          service: 's3',
          region,
          headers: { 'X-Amz-Content-Sha256': 'UNSIGNED-PAYLOAD' },
        },
        { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secret },
      );
      const res = await fetch(`http://127.0.0.1:${backendPort}${path}`, { method: 'PUT', headers: signed.headers, body });
      if (!res.ok) throw new Error(`put ${key}: ${res.status} ${await res.text()}`);
    },
    age: (keys, days) => {
      const then = new Date(Date.now() - days * 86_400_000);
      for (const key of keys) {
        const parts = key.split('/');
        utimesSync(join(directory, bucket, ...parts.slice(0, -1), `${parts.at(-1)}._S3rver_object`), then, then);
      }
    },
    close: async () => {
      await new Promise((resolve) => front.close(resolve));
      await backend.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };

  /** Every object below `prefix`, read from s3rver page by page (no delimiter, which it gets wrong). */
  async function listAll(prefix: string): Promise<Array<{ key: string; size: string; modified: string; etag: string }>> {
    const objects: Array<{ key: string; size: string; modified: string; etag: string }> = [];
    let token: string | undefined;
    do {
      const path = `/${bucket}?list-type=2&prefix=${encodeURIComponent(prefix)}${token ? `&continuation-token=${encodeURIComponent(token)}` : ''}`;
      const signed = aws4.sign(
        { host: `127.0.0.1:${backendPort}`, method: 'GET', path, service: 's3', region },
        { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secret },
      );
      const text = await (await fetch(`http://127.0.0.1:${backendPort}${path}`, { headers: signed.headers })).text();
      for (const [, entry] of text.matchAll(/<Contents>(.*?)<\/Contents>/gs)) {
        const field = (name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(entry!)?.[1] ?? '';
        objects.push({ key: unescapeXml(field('Key')), size: field('Size'), modified: field('LastModified'), etag: field('ETag') });
      }
      token = /<IsTruncated>true<\/IsTruncated>/.test(text)
        ? unescapeXml(/<NextContinuationToken>([^<]+)</.exec(text)?.[1] ?? '')
        : undefined;
    } while (token);
    return objects;
  }

  /** ListObjectsV2 with a delimiter, answered whole (no pages) from the full listing. */
  async function listDelimited(url: URL): Promise<string> {
    const prefix = url.searchParams.get('prefix') ?? '';
    const delimiter = url.searchParams.get('delimiter')!;
    const contents: string[] = [];
    const prefixes = new Set<string>();
    for (const o of await listAll(prefix)) {
      const at = o.key.indexOf(delimiter, prefix.length);
      if (at !== -1) prefixes.add(o.key.slice(0, at + delimiter.length));
      else
        contents.push(
          `<Contents><Key>${escapeXml(o.key)}</Key><LastModified>${o.modified}</LastModified><ETag>${o.etag}</ETag>` +
            `<Size>${o.size}</Size><StorageClass>STANDARD</StorageClass></Contents>`,
        );
    }
    const common = [...prefixes].sort().map((p) => `<CommonPrefixes><Prefix>${escapeXml(p)}</Prefix></CommonPrefixes>`);
    return (
      '<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' +
      `<Name>${bucket}</Name><Prefix>${escapeXml(prefix)}</Prefix><Delimiter>${escapeXml(delimiter)}</Delimiter>` +
      `<KeyCount>${contents.length + common.length}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>` +
      `${contents.join('')}${common.join('')}</ListBucketResult>`
    );
  }

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
    const url = new URL(req.url ?? '/', 'http://front');
    if (req.method === 'GET' && url.pathname.replace(/\/$/, '') === `/${bucket}` && url.searchParams.get('delimiter')) {
      req.resume();
      void listDelimited(url).then(
        (body) => {
          res.writeHead(200, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) });
          res.end(body);
        },
        () => res.destroy(),
      );
      return;
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

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const unescapeXml = (s: string) =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');

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

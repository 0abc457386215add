import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { S3Client } from '@aws-sdk/client-s3';

/** Where add-on backups go when BACKUP_S3_ENDPOINT is set (the BACKUP_S3_* settings). */
export interface ObjectStoreSettings {
  endpoint: string;
  bucket: string;
  region: string;
  prefix: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
}

/** A failure of the object store, its message fit for a backup's detail: it never holds the secret. */
export class ObjectStoreError extends Error {}

/** An object's key and size, as listed. */
export interface StoredObject {
  key: string;
  size: number;
  modified: Date;
}

// A multipart upload has at most 10,000 parts of at least 5 MiB: parts grow with the size announced.
const MIN_PART_BYTES = 8 * 1024 * 1024;
const MAX_PARTS = 9_000;

/**
 * An S3-compatible bucket for add-on backups (AWS SDK v3: SigV4, multipart uploads, retries).
 * The SDK is loaded on first use only, so a platform without S3 storage never pays for it
 * (load time, idle memory). Uploads stream: at most two parts are held in memory at once.
 * Errors become ObjectStoreError with a reason a member can act on (a refused secret, a missing
 * bucket, an unreachable endpoint), never the secret itself.
 */
export class ObjectStore {
  private loaded: Promise<{ client: S3Client; sdk: typeof import('@aws-sdk/client-s3') }> | null = null;

  constructor(private readonly settings: ObjectStoreSettings) {}

  /** The key of an add-on's object: `<prefix><add-on id>/<path>`. */
  key(addonId: string, path: string): string {
    return `${this.settings.prefix}${addonId}/${path}`;
  }

  /** Where the objects are, for messages members read: neither the operator's endpoint nor bucket (nor any credential). */
  get where(): string {
    return 'the backup store';
  }

  private load() {
    this.loaded ??= import('@aws-sdk/client-s3').then((sdk) => ({
      sdk,
      client: new sdk.S3Client({
        endpoint: this.settings.endpoint,
        region: this.settings.region,
        forcePathStyle: this.settings.forcePathStyle,
        credentials: { accessKeyId: this.settings.accessKeyId, secretAccessKey: this.settings.secretAccessKey },
        // Checksums only where S3 requires them: the SDK's default (aws-chunked bodies with
        // trailing checksums) is not understood by many S3-compatible stores.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        maxAttempts: 3,
        // A store that stops answering fails the request instead of holding a backup (or a sweep) forever:
        // the request timeout is the socket's idle time, so a long upload that keeps moving is never cut.
        requestHandler: { connectionTimeout: 10_000, requestTimeout: 120_000 },
      }),
    }));
    return this.loaded;
  }

  /** Streams `body` into `key` (multipart past one part); `expectedBytes` sizes the parts. Returns the bytes sent. */
  async upload(key: string, body: Readable, expectedBytes: number): Promise<number> {
    const { client } = await this.load();
    const { Upload } = await import('@aws-sdk/lib-storage');
    let sent = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        sent += chunk.length;
        done(null, chunk);
      },
    });
    // The source's failure (a bound exceeded, the task ended) fails the upload through `counted`.
    pipeline(body, counted).catch(() => {});
    const upload = new Upload({
      client,
      params: { Bucket: this.settings.bucket, Key: key, Body: counted },
      partSize: Math.max(MIN_PART_BYTES, Math.ceil(expectedBytes / MAX_PARTS)),
      queueSize: 2,
    });
    try {
      await upload.done();
    } catch (err) {
      body.destroy();
      throw this.failure(`uploading ${key}`, err);
    }
    return sent;
  }

  /** Writes a small object whole. */
  async put(key: string, text: string): Promise<void> {
    const { client, sdk } = await this.load();
    await client
      .send(new sdk.PutObjectCommand({ Bucket: this.settings.bucket, Key: key, Body: text, ContentType: 'application/json' }))
      .catch((err) => {
        throw this.failure(`writing ${key}`, err);
      });
  }

  /** The object's content as a stream. */
  async download(key: string): Promise<Readable> {
    const { client, sdk } = await this.load();
    const out = await client.send(new sdk.GetObjectCommand({ Bucket: this.settings.bucket, Key: key })).catch((err) => {
      throw this.failure(`downloading ${key}`, err);
    });
    return out.Body as Readable;
  }

  /** Every object below `prefix` (pages of 1,000 followed). */
  async list(prefix: string): Promise<StoredObject[]> {
    const { client, sdk } = await this.load();
    const objects: StoredObject[] = [];
    let token: string | undefined;
    do {
      const page = await client
        .send(new sdk.ListObjectsV2Command({ Bucket: this.settings.bucket, Prefix: prefix, ContinuationToken: token }))
        .catch((err) => {
          throw this.failure(`listing ${prefix}`, err);
        });
      for (const o of page.Contents ?? []) objects.push({ key: o.Key!, size: o.Size ?? 0, modified: o.LastModified ?? new Date(0) });
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return objects;
  }

  /** The add-on ids that have objects below the prefix (one level of "directories"). */
  async addonIds(): Promise<string[]> {
    const { client, sdk } = await this.load();
    const ids: string[] = [];
    let token: string | undefined;
    do {
      const page = await client
        .send(
          new sdk.ListObjectsV2Command({
            Bucket: this.settings.bucket,
            Prefix: this.settings.prefix,
            Delimiter: '/',
            ContinuationToken: token,
          }),
        )
        .catch((err) => {
          throw this.failure(`listing ${this.settings.prefix}`, err);
        });
      for (const p of page.CommonPrefixes ?? []) ids.push(p.Prefix!.slice(this.settings.prefix.length).replace(/\/$/, ''));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return ids;
  }

  /** Removes objects, one request each (stores differ in their bulk delete; retention removes few at a time). */
  async remove(keys: string[]): Promise<void> {
    const { client, sdk } = await this.load();
    for (const key of keys)
      await client.send(new sdk.DeleteObjectCommand({ Bucket: this.settings.bucket, Key: key })).catch((err) => {
        throw this.failure(`removing ${key}`, err);
      });
  }

  private failure(what: string, err: unknown): ObjectStoreError {
    const e = err as { name?: string; Code?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
    const status = e.$metadata?.httpStatusCode;
    const code = e.Code ?? e.name ?? e.code ?? 'Error';
    const cause = (e as { cause?: { code?: string } }).cause?.code ?? e.code;
    const reason =
      code === 'SignatureDoesNotMatch'
        ? 'the store refused the signature (SignatureDoesNotMatch): check BACKUP_S3_SECRET_ACCESS_KEY'
        : code === 'InvalidAccessKeyId'
          ? 'the store does not know the access key (InvalidAccessKeyId): check BACKUP_S3_ACCESS_KEY_ID'
          : code === 'NoSuchBucket'
            ? 'the bucket does not exist (NoSuchBucket): check BACKUP_S3_BUCKET'
            : code === 'AccessDenied' || status === 403
              ? `access denied (${code}${status ? `, ${status}` : ''})`
              : cause && /^E[A-Z]+$/.test(cause)
                ? `the endpoint is unreachable (${cause}): check BACKUP_S3_ENDPOINT`
                : `${code}${status ? ` (${status})` : ''}: ${(e.message ?? '').slice(0, 200)}`;
    const message = `${this.where}: ${what}: ${reason}`;
    const secret = this.settings.secretAccessKey;
    return new ObjectStoreError(secret.length >= 8 ? message.split(secret).join('[secret]') : message);
  }
}

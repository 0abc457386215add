// The parts of the test S3 server (s3rver) and the independent SigV4 signer (aws4) the tests use.
declare module 's3rver' {
  export default class S3rver {
    constructor(options: {
      port?: number;
      address?: string;
      directory: string;
      silent?: boolean;
      configureBuckets?: Array<{ name: string }>;
    });
    run(): Promise<{ port: number; address: string }>;
    close(): Promise<void>;
  }
}

declare module 'aws4' {
  interface SignRequest {
    host?: string;
    method?: string;
    path?: string;
    service?: string;
    region?: string;
    headers?: Record<string, string>;
  }
  const aws4: {
    sign(
      request: SignRequest,
      credentials: { accessKeyId: string; secretAccessKey: string },
    ): SignRequest & { headers: Record<string, string> };
  };
  export default aws4;
}

import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import type { SecretBox } from '../../platform/crypto/secret-box.js';
import type { DomainsRepository } from './domains.repository.js';

export interface AcmeSettings {
  directoryUrl: string;
  email?: string;
  /** PEM of a private CA that signs the directory's own HTTPS certificate. */
  caFile?: string;
}

export interface IssuedCertificate {
  /** Leaf then chain, PEM. */
  certificatePem: string;
  privateKeyPem: string;
  notAfter: Date;
}

/**
 * Certificates from an RFC 8555 server (Let's Encrypt, pebble, …) over HTTP-01: the
 * challenge answer is stored in PostgreSQL and served by whichever edge process the CA
 * reaches. The platform's account key is created once per directory and kept encrypted.
 */
type AcmeClientModule = typeof import('acme-client');

export class AcmeIssuer {
  private client: Promise<AcmeClientModule> | undefined;

  constructor(
    private readonly settings: AcmeSettings,
    private readonly repo: DomainsRepository,
    private readonly secrets: SecretBox,
  ) {}

  /** acme-client is loaded at the first certificate: it weighs ~30 MiB of memory that a platform without domains never needs. */
  private acme() {
    return (this.client ??= import('acme-client').then((loaded) => {
      // A CommonJS module: its exports arrive as `default`.
      const acme = ((loaded as unknown as { default?: AcmeClientModule }).default ?? loaded) as AcmeClientModule;
      // acme-client talks through its own axios instance: trust the private CA there only.
      if (this.settings.caFile) acme.axios.defaults.httpsAgent = new Agent({ ca: readFileSync(this.settings.caFile) });
      return acme;
    }));
  }

  async issue(hostname: string): Promise<IssuedCertificate> {
    const acme = await this.acme();
    const client = new acme.Client({ directoryUrl: this.settings.directoryUrl, accountKey: await this.accountKey() });
    const [key, csr] = await acme.crypto.createCsr({ commonName: hostname, altNames: [hostname] });
    const certificatePem = await client.auto({
      csr,
      email: this.settings.email,
      termsOfServiceAgreed: true,
      challengePriority: ['http-01'],
      // The CA checks the answer; a self-check would resolve the name from here, which proves nothing more.
      skipChallengeVerification: true,
      challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
        await this.repo.putChallenge(challenge.token, keyAuthorization);
      },
      challengeRemoveFn: async (_authz, challenge) => {
        await this.repo.dropChallenge(challenge.token);
      },
    });
    const info = acme.crypto.readCertificateInfo(certificatePem);
    return { certificatePem, privateKeyPem: key.toString(), notAfter: info.notAfter };
  }

  private async accountKey(): Promise<Buffer> {
    const acme = await this.acme();
    const url = this.settings.directoryUrl;
    const stored =
      (await this.repo.accountKey(url)) ??
      (await this.repo.keepAccountKey(url, this.secrets.seal((await acme.crypto.createPrivateKey()).toString())));
    return Buffer.from(this.secrets.open(stored));
  }
}

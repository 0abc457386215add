import { readFileSync } from 'node:fs';
import { Agent } from 'node:https';
import acme from 'acme-client';
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
export class AcmeIssuer {
  constructor(
    private readonly settings: AcmeSettings,
    private readonly repo: DomainsRepository,
    private readonly secrets: SecretBox,
  ) {
    // acme-client talks through its own axios instance: trust the private CA there only.
    if (settings.caFile) acme.axios.defaults.httpsAgent = new Agent({ ca: readFileSync(settings.caFile) });
  }

  async issue(hostname: string): Promise<IssuedCertificate> {
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
    const url = this.settings.directoryUrl;
    const stored =
      (await this.repo.accountKey(url)) ??
      (await this.repo.keepAccountKey(url, this.secrets.seal((await acme.crypto.createPrivateKey()).toString())));
    return Buffer.from(this.secrets.open(stored));
  }
}

import type { Db } from '../../platform/db/database.js';
import type { DomainsTable } from '../../platform/db/schema.js';

export type DomainRow = Awaited<ReturnType<DomainsRepository['list']>>[number];

export class DomainsRepository {
  constructor(private readonly db: Db) {}

  private selectDomains() {
    return (
      this.db
        .selectFrom('domains as d')
        .innerJoin('environments as e', 'e.id', 'd.environment_id')
        // A certificate belongs to the proven claim of its name, never to another application's pending one.
        .leftJoin('certificates as c', (j) => j.onRef('c.hostname', '=', 'd.hostname').on('d.verified_at', 'is not', null))
        .selectAll('d')
        .select(['e.slug as environment_slug', 'c.not_after'])
    );
  }

  list(applicationId: string) {
    return this.selectDomains().where('d.application_id', '=', applicationId).orderBy('d.hostname').execute();
  }

  find(applicationId: string, id: string) {
    return this.selectDomains().where('d.application_id', '=', applicationId).where('d.id', '=', id).executeTakeFirst();
  }

  async insert(
    row: Pick<DomainsTable, 'id' | 'application_id' | 'environment_id' | 'hostname' | 'route_hostname' | 'verification_token'> & {
      https_redirect: boolean;
      hsts: boolean;
    },
  ) {
    await this.db
      .insertInto('domains')
      .values({ ...row, created_at: new Date(), updated_at: new Date() })
      .execute();
  }

  async markVerified(id: string) {
    await this.db.updateTable('domains').set({ verified_at: new Date(), updated_at: new Date() }).where('id', '=', id).execute();
  }

  /** The application that proved the name, if any. */
  async verifiedOwner(hostname: string) {
    return this.db
      .selectFrom('domains')
      .select(['id', 'application_id'])
      .where('hostname', '=', hostname)
      .where('verified_at', 'is not', null)
      .executeTakeFirst();
  }

  /** Removes a claim; the name's certificate goes with it only when this was the proven claim. */
  async remove(id: string, hostname: string, verified: boolean) {
    await this.db.transaction().execute(async (trx) => {
      await trx.deleteFrom('domains').where('id', '=', id).execute();
      if (verified) await trx.deleteFrom('certificates').where('hostname', '=', hostname).execute();
    });
  }

  /**
   * Takes the right to (re)issue a domain's certificate: one process at a time, a claim
   * older than 10 minutes (its process died) may be taken over.
   */
  async claimIssuance(id: string): Promise<boolean> {
    const row = await this.db
      .updateTable('domains')
      .set({ certificate_status: 'pending', certificate_error: null, updated_at: new Date() })
      .where('id', '=', id)
      .where('verified_at', 'is not', null)
      .where((eb) => eb.or([eb('certificate_status', '!=', 'pending'), eb('updated_at', '<', new Date(Date.now() - 10 * 60_000))]))
      .returning('id')
      .executeTakeFirst();
    return Boolean(row);
  }

  async saveCertificate(domainId: string, hostname: string, certificatePem: string, privateKeyEnc: string, notAfter: Date) {
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('certificates')
        .values({ hostname, certificate_pem: certificatePem, private_key_enc: privateKeyEnc, not_after: notAfter, issued_at: new Date() })
        .onConflict((oc) =>
          oc
            .column('hostname')
            .doUpdateSet({ certificate_pem: certificatePem, private_key_enc: privateKeyEnc, not_after: notAfter, issued_at: new Date() }),
        )
        .execute();
      await trx
        .updateTable('domains')
        .set({ certificate_status: 'issued', certificate_error: null, updated_at: new Date() })
        .where('id', '=', domainId)
        .execute();
    });
  }

  async markFailed(domainId: string, message: string) {
    await this.db
      .updateTable('domains')
      .set({ certificate_status: 'failed', certificate_error: message.slice(0, 500), updated_at: new Date() })
      .where('id', '=', domainId)
      .execute();
  }

  /** Verified domains whose certificate is missing, failed, or expires before `before`. */
  dueForCertificate(before: Date) {
    return this.db
      .selectFrom('domains as d')
      .leftJoin('certificates as c', 'c.hostname', 'd.hostname')
      .select(['d.id', 'd.hostname'])
      .where('d.verified_at', 'is not', null)
      .where((eb) => eb.or([eb('c.hostname', 'is', null), eb('c.not_after', '<', before)]))
      .execute();
  }

  async putChallenge(token: string, keyAuthorization: string) {
    await this.db
      .insertInto('acme_challenges')
      .values({ token, key_authorization: keyAuthorization })
      .onConflict((oc) => oc.column('token').doUpdateSet({ key_authorization: keyAuthorization }))
      .execute();
  }

  async dropChallenge(token: string) {
    await this.db.deleteFrom('acme_challenges').where('token', '=', token).execute();
  }

  async accountKey(directoryUrl: string): Promise<string | undefined> {
    const row = await this.db
      .selectFrom('acme_accounts')
      .select('account_key_enc')
      .where('directory_url', '=', directoryUrl)
      .executeTakeFirst();
    return row?.account_key_enc;
  }

  /** Stores the account key unless another process stored one first; returns the one kept. */
  async keepAccountKey(directoryUrl: string, keyEnc: string): Promise<string> {
    await this.db
      .insertInto('acme_accounts')
      .values({ directory_url: directoryUrl, account_key_enc: keyEnc })
      .onConflict((oc) => oc.column('directory_url').doNothing())
      .execute();
    return (await this.accountKey(directoryUrl))!;
  }
}

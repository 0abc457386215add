import { sql } from 'kysely';
import type { Insertable } from 'kysely';
import type { Db } from '../../platform/db/database.js';
import type { OidcIssuersTable, OidcSignInsTable } from '../../platform/db/schema.js';

const issuerColumns = [
  'id',
  'name',
  'display_name',
  'discovery_url',
  'client_id',
  'allowed_email_domains',
  'group_claim',
  'extra_scopes',
  'created_at',
  'updated_at',
] as const;

export class SsoRepository {
  constructor(private readonly db: Db) {}

  listIssuers() {
    return this.db.selectFrom('oidc_issuers').select(issuerColumns).orderBy('name').execute();
  }

  insertIssuer(issuer: Insertable<OidcIssuersTable>) {
    return this.db.insertInto('oidc_issuers').values(issuer).returning(issuerColumns).executeTakeFirstOrThrow();
  }

  /** The issuer with its sealed secret: for signing in only. */
  findIssuerWithSecret(name: string) {
    return this.db
      .selectFrom('oidc_issuers')
      .select([...issuerColumns, 'client_secret_sealed'])
      .where('name', '=', name)
      .executeTakeFirst();
  }

  findIssuerById(id: string) {
    return this.db
      .selectFrom('oidc_issuers')
      .select([...issuerColumns, 'client_secret_sealed'])
      .where('id', '=', id)
      .executeTakeFirst();
  }

  async deleteIssuer(name: string): Promise<boolean> {
    const res = await this.db.deleteFrom('oidc_issuers').where('name', '=', name).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  listGroupMappings(issuerId: string) {
    return this.db
      .selectFrom('oidc_group_mappings as m')
      .innerJoin('organizations as o', 'o.id', 'm.organization_id')
      .select(['m.id', 'm.group_value', 'm.role', 'm.created_at', 'm.organization_id', 'o.slug as organization'])
      .where('m.issuer_id', '=', issuerId)
      .orderBy('m.group_value')
      .orderBy('o.slug')
      .execute();
  }

  insertGroupMapping(row: { issuer_id: string; group_value: string; organization_id: string; role: string }) {
    return this.db.insertInto('oidc_group_mappings').values(row).returning('id').executeTakeFirstOrThrow();
  }

  async deleteGroupMapping(issuerId: string, id: string): Promise<boolean> {
    const res = await this.db.deleteFrom('oidc_group_mappings').where('issuer_id', '=', issuerId).where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /** The mappings whose group is among `groups` (the ID token's group claim). */
  mappingsForGroups(db: Db, issuerId: string, groups: string[]) {
    if (groups.length === 0) return Promise.resolve([]);
    return db
      .selectFrom('oidc_group_mappings')
      .select(['organization_id', 'role', 'group_value'])
      .where('issuer_id', '=', issuerId)
      .where('group_value', 'in', groups)
      .execute();
  }

  insertSignIn(row: OidcSignInsTable) {
    return this.db.insertInto('oidc_sign_ins').values(row).execute();
  }

  /** Spends a sign-in under way: it answers once (a replayed callback finds nothing), and only while fresh. */
  async takeSignIn(stateHash: string) {
    const row = await this.db.deleteFrom('oidc_sign_ins').where('state_hash', '=', stateHash).returningAll().executeTakeFirst();
    return row && row.expires_at.getTime() > Date.now() ? row : undefined;
  }

  deleteExpiredSignIns() {
    return this.db
      .deleteFrom('oidc_sign_ins')
      .where('expires_at', '<=', sql<Date>`now()`)
      .execute();
  }

  findIdentity(db: Db, issuerId: string, subject: string) {
    return db
      .selectFrom('oidc_identities as i')
      .innerJoin('users as u', 'u.id', 'i.user_id')
      .select(['u.id', 'u.username', 'u.email', 'u.is_admin'])
      .where('i.issuer_id', '=', issuerId)
      .where('i.subject', '=', subject)
      .executeTakeFirst();
  }

  findUserByEmail(db: Db, email: string) {
    return db
      .selectFrom('users')
      .select(['id', 'username', 'email', 'is_admin'])
      .where(sql<string>`lower(email)`, '=', email.toLowerCase())
      .executeTakeFirst();
  }

  async linkIdentity(db: Db, issuerId: string, subject: string, userId: string) {
    await db
      .insertInto('oidc_identities')
      .values({ issuer_id: issuerId, subject, user_id: userId })
      .onConflict((oc) => oc.columns(['issuer_id', 'subject']).doUpdateSet({ last_sign_in_at: sql`now()` }))
      .execute();
  }
}

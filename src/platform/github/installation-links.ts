import type { Db } from '../db/database.js';
import { conflict, forbidden } from '../errors.js';

/**
 * Which organization each GitHub App installation serves (`github_installation_links`). An
 * installation id is a number anyone can type: an application may use one only when it is
 * linked to the application's organization, by the App's setup flow (an admin of that
 * organization who installed it, as GitHub confirms) or by a site administrator.
 */

/** The organization an installation is linked to, or null. */
export async function installationOrganization(db: Db, installationId: number): Promise<string | null> {
  const row = await db
    .selectFrom('github_installation_links')
    .select('organization_id')
    .where('installation_id', '=', installationId)
    .executeTakeFirst();
  return row?.organization_id ?? null;
}

/**
 * Which organizations a signed GitHub hook about a repository may act for. GitHub signs every
 * hook with the site's one secret and names a repository, not an organization, and any member
 * can name any repository in an application: a hook about a private repository therefore
 * reaches only the organization its installation (`installation.id`) is linked to, so no other
 * organization learns its commits, branches or pull requests, nor builds them. Null: any
 * organization (a public repository's hooks tell nothing that is not public).
 */
export async function hookOrganizations(
  db: Db,
  repository: { private?: unknown },
  installationId: number | null,
): Promise<{ only: string | null } | null> {
  if (repository.private !== true) return null;
  return { only: installationId === null ? null : await installationOrganization(db, installationId) };
}

/** Whether the installation is linked to this organization (what a worker checks before using it). */
export async function isInstallationOf(db: Db, installationId: number, organizationId: string): Promise<boolean> {
  return (await installationOrganization(db, Number(installationId))) === organizationId;
}

/** The refusal of an installation the organization may not use (403, the same for unknown and foreign ones). */
export function installationRefusal(installationId: number): string {
  return (
    `The GitHub App installation ${installationId} is not linked to this organization: an organization admin links it ` +
    'by installing the App through POST /organizations/{org_slug}/github/installations/setup, or a site administrator ' +
    'through PUT /github/installations/{installation_id}'
  );
}

/** Throws 403 unless the installation is linked to the organization. */
export async function requireInstallationOf(db: Db, installationId: number, organizationId: string): Promise<void> {
  if (!(await isInstallationOf(db, installationId, organizationId))) throw forbidden(installationRefusal(installationId));
}

/**
 * Links an installation to an organization. One already linked to another organization is
 * refused (409) unless `move` (a site administrator's decision).
 */
export async function linkInstallation(
  db: Db,
  link: { installationId: number; organizationId: string; userId: string; via: 'setup' | 'admin'; move?: boolean },
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const current = await trx
      .selectFrom('github_installation_links')
      .select('organization_id')
      .where('installation_id', '=', link.installationId)
      .forUpdate()
      .executeTakeFirst();
    if (current && current.organization_id !== link.organizationId && !link.move) {
      throw conflict(`The GitHub App installation ${link.installationId} is linked to another organization`);
    }
    await trx
      .insertInto('github_installation_links')
      .values({
        installation_id: link.installationId,
        organization_id: link.organizationId,
        linked_by: link.userId,
        linked_via: link.via,
      })
      .onConflict((oc) =>
        oc.column('installation_id').doUpdateSet({
          organization_id: link.organizationId,
          linked_by: link.userId,
          linked_via: link.via,
          linked_at: new Date(),
        }),
      )
      .execute();
  });
}

/** Removes the organization's link of an installation; false when it had none. */
export async function unlinkInstallation(db: Db, installationId: number, organizationId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('github_installation_links')
    .where('installation_id', '=', installationId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** The organization's installations, with what GitHub's hooks said about each. */
export function organizationInstallations(db: Db, organizationId: string) {
  return db
    .selectFrom('github_installation_links as l')
    .leftJoin('github_installations as i', 'i.installation_id', 'l.installation_id')
    .select(['l.installation_id', 'l.linked_via', 'l.linked_at', 'i.account', 'i.repository_selection'])
    .where('l.organization_id', '=', organizationId)
    .orderBy('l.linked_at')
    .execute();
}

/**
 * Before queueing a build of an application's private repository: 403 now, rather than a failed
 * build later, when its installation is not its organization's (the build checks again).
 */
export async function requireBuildInstallation(
  db: Db,
  app: { organization_id: string; github_repository_is_private: boolean; github_app_installation_id: number | null },
): Promise<void> {
  if (app.github_repository_is_private && app.github_app_installation_id !== null)
    await requireInstallationOf(db, Number(app.github_app_installation_id), app.organization_id);
}

/**
 * The installation the platform may act with for an application (reports, statuses): the one
 * given when it is linked to the application's organization, else null (nothing is posted with it).
 */
export async function installationForApplication(db: Db, applicationId: string, installationId: number | null): Promise<number | null> {
  if (installationId === null) return null;
  const row = await db
    .selectFrom('applications as a')
    .innerJoin('projects as p', 'p.id', 'a.project_id')
    .innerJoin('github_installation_links as l', 'l.organization_id', 'p.organization_id')
    .select('l.installation_id')
    .where('a.id', '=', applicationId)
    .where('l.installation_id', '=', Number(installationId))
    .executeTakeFirst();
  return row ? Number(row.installation_id) : null;
}

import { deleteScopeVariables } from '../configurations/index.js';
import { sql } from 'kysely';
import type { Db } from '../../platform/db/database.js';

export class TeamsRepository {
  constructor(private readonly db: Db) {}

  list(organizationId: string, teamId?: string) {
    let q = this.db
      .selectFrom('teams as t')
      .select([
        't.id',
        't.name',
        't.slug',
        't.created_at',
        sql<Array<{ user_id: string; username: string; email: string }>>`coalesce((
          select json_agg(json_build_object('user_id', u.id, 'username', u.username, 'email', u.email) order by tm.created_at)
          from team_members tm join users u on u.id = tm.user_id where tm.team_id = t.id), '[]'::json)`.as('members'),
        sql<string[]>`coalesce((select array_agg(p.slug order by p.slug) from projects p where p.team_id = t.id), '{}')`.as('projects'),
      ])
      .where('t.organization_id', '=', organizationId);
    if (teamId !== undefined) q = q.where('t.id', '=', teamId);
    return q.orderBy('t.slug').execute();
  }

  /** Creates the team with its first members in one transaction. */
  insert(team: { id: string; organization_id: string; name: string; slug: string }, memberIds: string[]) {
    return this.db.transaction().execute(async (trx) => {
      await trx.insertInto('teams').values(team).execute();
      if (memberIds.length > 0) {
        await trx
          .insertInto('team_members')
          .values(memberIds.map((user_id) => ({ team_id: team.id, organization_id: team.organization_id, user_id })))
          .onConflict((oc) => oc.doNothing())
          .execute();
      }
    });
  }

  async isMember(teamId: string, userId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('team_members')
      .select('user_id')
      .where('team_id', '=', teamId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return Boolean(row);
  }

  async addMember(team: { id: string; organization_id: string }, userId: string) {
    const res = await this.db
      .insertInto('team_members')
      .values({ team_id: team.id, organization_id: team.organization_id, user_id: userId })
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  async removeMember(teamId: string, userId: string) {
    const res = await this.db.deleteFrom('team_members').where('team_id', '=', teamId).where('user_id', '=', userId).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /** Deletes the team and its configuration; its projects stay, without a team. */
  delete(teamId: string) {
    return this.db.transaction().execute(async (trx) => {
      await deleteScopeVariables(trx, { scope: 'team', scopeId: teamId });
      await trx.deleteFrom('teams').where('id', '=', teamId).execute();
    });
  }
}

import { useState } from 'preact/hooks';
import { api, ApiError, errorText, ok, type Paths } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { ErrorMessage, FieldError, invalidProps, Loading, when } from '../components/ui.js';
import { useLoad } from '../hooks.js';

type Role = Paths['/v1/organizations/{org_slug}/invitations']['post']['requestBody']['content']['application/json']['role'];
export const ROLES: Role[] = ['viewer', 'developer', 'deployer', 'admin', 'owner'];

/**
 * Invitations by e-mail with a role: send (the link is shown when no mail went out), the open
 * ones with who invited and when they expire, revoke through the confirmation.
 */
export function InvitationsSection({ org }: { org: string }) {
  const path = { params: { path: { org_slug: org } } };
  const invitations = useLoad(() => ok(api.GET('/v1/organizations/{org_slug}/invitations', path)), [org]);
  const [sent, setSent] = useState<{ email: string; link?: string; delivered: boolean } | null>(null);
  const [refusal, setRefusal] = useState<{ email?: string; other?: string } | null>(null);
  const invite = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    try {
      const created = await ok(
        api.POST('/v1/organizations/{org_slug}/invitations', {
          ...path,
          body: { email: String(data.get('email')).trim(), role: String(data.get('role')) as Role },
        }),
      );
      setSent({ email: created.email, link: created.link, delivered: created.delivered });
      setRefusal(null);
      form.reset();
      invitations.reload();
    } catch (e) {
      const aboutEmail =
        e instanceof ApiError && (e.fields.some((f) => f.field.includes('email')) || /member|invitation|e-?mail/i.test(e.message));
      setRefusal(aboutEmail ? { email: errorText(e) } : { other: errorText(e) });
    }
  };
  return (
    <>
      <section aria-labelledby="open-h">
        <h2 id="open-h">Open invitations</h2>
        <Loading state={invitations} what="invitations" empty="No open invitations.">
          {(list) => (
            <div class="table-scroll">
              <table aria-label="Open invitations">
                <thead>
                  <tr>
                    <th>E-mail</th>
                    <th>Role</th>
                    <th class="wide-only">Sent</th>
                    <th>Expires</th>
                    <th>
                      <span class="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((i) => (
                    <tr key={i.id} data-invitation={i.email}>
                      <td>{i.email}</td>
                      <td>{i.role}</td>
                      <td class="wide-only">{when(i.created)}</td>
                      <td>{when(i.expires)}</td>
                      <td>
                        <ConfirmAction
                          class="compact"
                          label="Revoke"
                          ariaLabel={`Revoke the invitation of ${i.email}`}
                          danger
                          title={`Revoke the invitation of ${i.email}`}
                          changes={[{ label: 'Link', from: `joins as ${i.role}`, to: 'no longer works' }]}
                          run={() =>
                            ok(
                              api.DELETE('/v1/organizations/{org_slug}/invitations/{invitation_id}', {
                                params: { path: { org_slug: org, invitation_id: i.id } },
                              }),
                            )
                          }
                          done="Revoked."
                          onDone={invitations.reload}
                        />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </Loading>
      </section>
      <section aria-labelledby="invite-h">
        <h2 id="invite-h">Invite someone</h2>
        <form aria-labelledby="invite-h" onSubmit={invite}>
          <label>
            E-mail
            <input name="email" type="email" required {...invalidProps('invite-email', refusal?.email)} />
          </label>
          <FieldError name="invite-email" message={refusal?.email} />
          <label>
            Role
            <select name="role" defaultValue="developer">
              {ROLES.map((r) => (
                <option key={r} value={r}>
                  {r}
                </option>
              ))}
            </select>
          </label>
          <button type="submit">Send invitation</button>
          <ErrorMessage message={refusal?.other} />
        </form>
        {sent && (
          <div class="panel" role="status">
            {sent.delivered ? (
              <p>Invitation e-mailed to {sent.email}.</p>
            ) : (
              <>
                <p>No e-mail was sent: give {sent.email} this link (shown once).</p>
                <code class="wrap" data-invitation-link>
                  {sent.link}
                </code>
              </>
            )}
          </div>
        )}
      </section>
    </>
  );
}

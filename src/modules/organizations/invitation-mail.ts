import type { Mailer } from '../../platform/mail/mailer.js';
import type { InvitationMessage, InvitationSender } from './invitations.js';

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The invitation as an e-mail: a text and an HTML part, the link, the role and when it expires. */
export function invitationMail(m: InvitationMessage) {
  const expires = m.expires.toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
  const subject = `You are invited to ${m.organization} on Slipway`;
  const text =
    `You are invited to join ${m.organization} on Slipway as ${m.role}.\n\n` +
    `Accept the invitation (sign in or sign up with this address):\n${m.link}\n\n` +
    `The link works once, until ${expires}. If you did not expect it, ignore this message.\n`;
  const html =
    `<p>You are invited to join <strong>${escapeHtml(m.organization)}</strong> on Slipway as <strong>${escapeHtml(m.role)}</strong>.</p>` +
    `<p><a href="${escapeHtml(m.link)}">Accept the invitation</a> (sign in or sign up with this address).</p>` +
    `<p>The link works once, until ${escapeHtml(expires)}. If you did not expect it, ignore this message.</p>`;
  return { to: [m.email], subject, text, html };
}

/**
 * Sends invitations through the site's mailer (SMTP_*). A refused or unanswered send is not the
 * inviter's failure: the invitation stands and they are shown the link to pass on themselves.
 */
export function mailInvitations(mailer: Mailer, onFailure: (err: unknown) => void): InvitationSender {
  return async (message) => {
    try {
      await mailer.send(invitationMail(message));
      return { delivered: true };
    } catch (err) {
      onFailure(err);
      return { delivered: false };
    }
  };
}

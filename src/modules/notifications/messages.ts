/** What a notification says, resolved from an outbox event (names and links, never ids alone). */
export interface NotificationFacts {
  event: string;
  organization: string;
  project: string | null;
  app: string | null;
  environment: string | null;
  release: number | null;
  who: string | null;
  status: string | null;
  detail: string | null;
  link: string | null;
  occurredAt: string;
}

type Tone = 'good' | 'bad' | 'warn' | 'info';

const TITLES: Record<string, [string, Tone]> = {
  'build.started': ['Build started', 'info'],
  'build.succeeded': ['Build succeeded', 'good'],
  'build.failed': ['Build failed', 'bad'],
  'release.started': ['Release started', 'info'],
  'release.succeeded': ['Release created', 'good'],
  'release.failed': ['Release failed', 'bad'],
  'deployment.started': ['Deploy started', 'info'],
  'deployment.succeeded': ['Deploy succeeded', 'good'],
  'deployment.failed': ['Deploy failed', 'bad'],
  'deployment.rolled_back': ['Guard fired: rolled back', 'warn'],
  'rollback.started': ['Rollback started', 'warn'],
  'rollback.succeeded': ['Rollback succeeded', 'warn'],
  'rollback.failed': ['Rollback failed', 'bad'],
  'scale.changed': ['Scaled', 'info'],
  'preview.created': ['Preview created', 'info'],
  'preview.deleted': ['Preview deleted', 'info'],
  'instance.crashed': ['Instance crashed', 'bad'],
  'instance.crash_loop': ['Crash loop', 'bad'],
  'instance.oom': ['Out of memory', 'bad'],
  'alert.firing': ['Alert firing', 'bad'],
  'alert.resolved': ['Alert resolved', 'good'],
  'certificate.expiring': ['Certificate expiring', 'warn'],
  'quota.near': ['Disk quota nearly used', 'warn'],
  test: ['Test notification', 'info'],
};

/** Discord's embed colours by outcome (Slack has no colour in blocks). */
const COLOURS: Record<Tone, number> = { good: 0x2eb67d, bad: 0xe01e5a, warn: 0xecb22e, info: 0x36c5f0 };

function titleOf(f: NotificationFacts): [string, Tone] {
  const [title, tone] = TITLES[f.event] ?? [f.event, 'info'];
  const subject = f.app ? `${f.app}${f.environment ? ` (${f.environment})` : ''}` : f.organization;
  return [`${title}: ${subject}`.slice(0, 150), tone];
}

function fieldsOf(f: NotificationFacts): Array<[string, string]> {
  const fields: Array<[string, string]> = [];
  if (f.app) fields.push(['App', f.project ? `${f.project}/${f.app}` : f.app]);
  if (f.environment) fields.push(['Environment', f.environment]);
  if (f.release !== null) fields.push(['Release', `v${f.release}`]);
  fields.push(['By', f.who ?? 'Slipway']);
  if (f.status) fields.push(['Status', f.status]);
  return fields;
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** Slack incoming-webhook payload: `text` (the notification's fallback) and Block Kit blocks. */
export function slackMessage(f: NotificationFacts) {
  const [title] = titleOf(f);
  const blocks: Array<Record<string, unknown>> = [
    { type: 'header', text: { type: 'plain_text', text: title, emoji: true } },
    {
      type: 'section',
      fields: fieldsOf(f).map(([name, value]) => ({ type: 'mrkdwn', text: `*${name}*\n${clip(value, 1900)}` })),
    },
  ];
  if (f.detail) blocks.push({ type: 'section', text: { type: 'mrkdwn', text: clip(f.detail, 2900) } });
  if (f.link) {
    blocks.push({
      type: 'actions',
      elements: [{ type: 'button', text: { type: 'plain_text', text: 'Open in Slipway' }, url: f.link }],
    });
  }
  blocks.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `${f.event} · ${f.organization} · ${f.occurredAt}` }] });
  return { text: title, blocks };
}

/** Discord webhook payload: one embed, coloured by outcome. */
export function discordMessage(f: NotificationFacts) {
  const [title, tone] = titleOf(f);
  const embed: Record<string, unknown> = {
    title: clip(title, 256),
    description: clip(f.detail ?? f.event, 4000),
    color: COLOURS[tone],
    fields: fieldsOf(f).map(([name, value]) => ({ name, value: clip(value, 1024), inline: true })),
    timestamp: f.occurredAt,
    footer: { text: `Slipway · ${f.organization}` },
  };
  if (f.link) embed.url = f.link;
  return { username: 'Slipway', embeds: [embed] };
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** An e-mail: the title as subject, the fields as a table (HTML) and as lines (text), a link to the dashboard. */
export function emailMessage(f: NotificationFacts) {
  const [title] = titleOf(f);
  const fields = fieldsOf(f);
  const detail = f.detail ? clip(f.detail, 4000) : null;
  const text = [
    title,
    '',
    ...fields.map(([name, value]) => `${name}: ${value}`),
    ...(detail ? ['', detail] : []),
    ...(f.link ? ['', `Open in Slipway: ${f.link}`] : []),
    '',
    `${f.event} · ${f.organization} · ${f.occurredAt}`,
  ].join('\n');
  const rows = fields
    .map(
      ([name, value]) => `<tr><th align="left" style="padding:2px 12px 2px 0">${escapeHtml(name)}</th><td>${escapeHtml(value)}</td></tr>`,
    )
    .join('');
  const html =
    `<!doctype html><html><body style="font-family:sans-serif">` +
    `<h2>${escapeHtml(title)}</h2><table>${rows}</table>` +
    (detail ? `<p style="white-space:pre-wrap">${escapeHtml(detail)}</p>` : '') +
    (f.link ? `<p><a href="${escapeHtml(f.link)}">Open in Slipway</a></p>` : '') +
    `<p style="color:#888;font-size:12px">${escapeHtml(`${f.event} · ${f.organization} · ${f.occurredAt}`)}</p></body></html>`;
  return { subject: `[Slipway] ${title}`, text, html };
}

export type ChannelKind = 'slack' | 'discord' | 'email';

export function messageFor(kind: ChannelKind, facts: NotificationFacts) {
  if (kind === 'email') return emailMessage(facts);
  return kind === 'slack' ? slackMessage(facts) : discordMessage(facts);
}

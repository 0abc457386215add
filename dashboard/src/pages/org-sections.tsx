import type { FunctionComponent } from 'preact';
import { AddonsSection } from './addons.js';
import { AlertsSection } from './alerts.js';
import { AuditSection } from './audit.js';
import { InvitationsSection } from './invitations.js';
import { NotificationsSection } from './notifications.js';
import { VolumesSection } from './volumes.js';

interface Section {
  slug: string;
  label: string;
  component: FunctionComponent<{ org: string }>;
}

/** The organization's capabilities beyond projects and members, each its own sub-route (/orgs/<org>/manage/<slug>). */
export const ORG_SECTIONS: Section[] = [
  { slug: 'notifications', label: 'Notifications', component: NotificationsSection },
  { slug: 'alerts', label: 'Alerts', component: AlertsSection },
  { slug: 'invitations', label: 'Invitations', component: InvitationsSection },
  { slug: 'addons', label: 'Add-ons', component: AddonsSection },
  { slug: 'volumes', label: 'Volumes', component: VolumesSection },
  { slug: 'audit', label: 'Audit log', component: AuditSection },
];

/** The organization's section navigation: its main page (projects, members, teams, webhooks) and every section. */
export function OrgNav({ org, current }: { org: string; current: string }) {
  return (
    <nav class="sections" aria-label="Organization sections">
      <a href={`/orgs/${org}`} aria-current={current === 'overview' ? 'page' : undefined}>
        Projects and members
      </a>
      {ORG_SECTIONS.map((s) => (
        <a key={s.slug} href={`/orgs/${org}/manage/${s.slug}`} aria-current={current === s.slug ? 'page' : undefined}>
          {s.label}
        </a>
      ))}
    </nav>
  );
}

/** One organization section: crumbs, the organization's name, the navigation and the section. */
export function OrgSectionPage({ org, section }: { org: string; section: string }) {
  const found = ORG_SECTIONS.find((s) => s.slug === section);
  return (
    <div class="app-layout">
      <header class="app-header">
        <p class="crumbs">
          <a href="/">Home</a> / <a href={`/orgs/${org}`}>{org}</a> /
        </p>
        <h1>{found ? found.label : 'Not found'}</h1>
      </header>
      <OrgNav org={org} current={section} />
      <div class="section-body" data-section={found?.slug ?? 'none'}>
        {found ? <found.component org={org} /> : <p class="error">No such section: {section}.</p>}
      </div>
    </div>
  );
}

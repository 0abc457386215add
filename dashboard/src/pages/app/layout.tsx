import type { FunctionComponent } from 'preact';
import { useEffect } from 'preact/hooks';
import { api, ok } from '../../api.js';
import { Icon, type IconName } from '../../components/icons.js';
import { Loading } from '../../components/ui.js';
import { useLoad } from '../../hooks.js';
import { applicationConfig, ConfigurationPanel } from '../configuration.js';
import { MetricsPanel } from '../metrics.js';
import { ActivitySection } from './activity.js';
import { AutoscalingSection } from './autoscaling.js';
import { CronSection } from './cron.js';
import { EffectiveConfigSection } from './effective-config.js';
import { PreviewsSection } from './previews.js';
import { ProtectionSection } from './protection.js';
import { ResourcesSection } from './resources.js';
import { RunsSection } from './runs.js';
import { SettingsSection } from './settings-section.js';
import { DeploymentsSection } from './deployments.js';
import { DomainsSection } from './domains.js';
import { LogsSection } from './logs.js';
import { OverviewSection } from './overview.js';
import type { SectionProps } from './types.js';

interface Section {
  slug: string;
  label: string;
  icon: IconName;
  component: FunctionComponent<SectionProps>;
}

/** The application's sections, each its own sub-route (/apps/org/project/app/<slug>) and its own file. */
const SECTIONS: Section[] = [
  { slug: 'overview', label: 'Overview', icon: 'overview', component: OverviewSection },
  { slug: 'deployments', label: 'Deployments', icon: 'deploy', component: DeploymentsSection },
  { slug: 'logs', label: 'Logs', icon: 'logs', component: LogsSection },
  {
    slug: 'configuration',
    label: 'Configuration',
    icon: 'config',
    component: ({ app }) => <ConfigurationPanel endpoints={applicationConfig(app.id)} />,
  },
  { slug: 'effective', label: 'Effective config', icon: 'layers', component: EffectiveConfigSection },
  { slug: 'runs', label: 'Runs', icon: 'play', component: RunsSection },
  { slug: 'cron', label: 'Cron', icon: 'calendar', component: CronSection },
  { slug: 'autoscaling', label: 'Autoscaling', icon: 'gauge', component: AutoscalingSection },
  { slug: 'environments', label: 'Environments', icon: 'shield', component: ProtectionSection },
  { slug: 'previews', label: 'Previews', icon: 'preview', component: PreviewsSection },
  { slug: 'domains', label: 'Domains', icon: 'domains', component: DomainsSection },
  { slug: 'resources', label: 'Add-ons & volumes', icon: 'database', component: ResourcesSection },
  { slug: 'metrics', label: 'Metrics', icon: 'metrics', component: ({ app }) => <MetricsPanel applicationId={app.id} /> },
  { slug: 'activity', label: 'Activity', icon: 'activity', component: ActivitySection },
  { slug: 'settings', label: 'Settings', icon: 'settings', component: SettingsSection },
];

/** An application: its name, the section navigation, and the chosen section. */
export function ApplicationPage({ org, project, app, tab = 'overview' }: { org: string; project: string; app: string; tab?: string }) {
  const detail = useLoad(
    () =>
      ok(
        api.GET('/v1/applications/{org_slug}/{project_slug}/{app_slug}', {
          params: { path: { org_slug: org, project_slug: project, app_slug: app } },
        }),
      ),
    [org, project, app],
  );
  const base = `/apps/${org}/${project}/${app}`;
  const section = SECTIONS.find((s) => s.slug === tab);
  // On a phone the sections are a scrolling strip: keep the current one in view.
  useEffect(() => {
    document.querySelector('.sections [aria-current="page"]')?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }, [tab, detail.data !== undefined]);
  return (
    <Loading state={detail} what="the application">
      {(a) => (
        <div class="app-layout">
          <header class="app-header">
            <p class="crumbs">
              <a href="/">Organizations</a> / <a href={`/orgs/${org}`}>{org}</a> / <a href={`/orgs/${org}/${project}`}>{project}</a> /
            </p>
            <h1 tabIndex={-1}>{a.name}</h1>
          </header>
          <nav class="sections" aria-label="Application sections">
            {SECTIONS.map((s) => (
              <a key={s.slug} href={s.slug === 'overview' ? base : `${base}/${s.slug}`} aria-current={s === section ? 'page' : undefined}>
                <Icon name={s.icon} />
                {s.label}
              </a>
            ))}
          </nav>
          <div class="section-body" data-section={section?.slug ?? 'none'} data-section-label={section?.label}>
            {section ? (
              <section.component app={a} org={org} project={project} reloadApp={detail.reload} />
            ) : (
              <p class="error">No such section: {tab}.</p>
            )}
          </div>
        </div>
      )}
    </Loading>
  );
}

import { useEffect, useState } from 'preact/hooks';
import { errorText, send } from '../api.js';
import { Icon } from '../components/icons.js';
import { Sparkline } from '../components/sparkline.js';
import { ErrorMessage, Loading, when } from '../components/ui.js';
import { useLoad } from '../hooks.js';
import { OrganizationsPage } from './organizations.js';

/** GET /v1/overview's answer (src/modules/overview/overview.schemas.ts). */
interface OverviewApp {
  id: string;
  name: string;
  slug: string;
  organization_slug: string;
  project_slug: string;
  state: 'failing' | 'deploying' | 'healthy' | 'idle';
  problems: string[];
  serving_release_version: number | null;
  instances: { total: number; healthy: number; crashed: number };
  last_deployment: {
    id: string;
    release_version: number;
    status: string;
    is_rollback: boolean;
    created: string;
    finished: string | null;
    started_by: string | null;
  } | null;
  traffic: { bucket_seconds: number; requests: number[]; errors: number[] };
}

/** One page of GET /v1/overview: `truncated` says more applications follow it. */
interface OverviewPage {
  applications: OverviewApp[];
  truncated: boolean;
}

/** Applications per page: a screenful of cards, and a fast first answer on an installation of thousands (issue 35). */
const PAGE_SIZE = 50;
const pageOf = (page: number) => send<OverviewPage>('GET', `/v1/overview?page=${page}&per_page=${PAGE_SIZE}`);

const CARD = { failing: 'card-error', deploying: 'card-busy', healthy: 'card-ok', idle: 'card-muted' } as const;
const ICON = { failing: 'error', deploying: 'busy', healthy: 'ok', idle: 'clock' } as const;
const STATE_TEXT = { failing: 'Failing', deploying: 'Deploying', healthy: 'Up', idle: 'Nothing serving' } as const;

/**
 * The home page: the first page of the applications the user can see with production's state,
 * failing ones first (one request), more pages on demand, then the organizations (a second).
 */
export function HomePage() {
  const overview = useLoad(() => pageOf(1), []);
  return (
    <>
      <h1>Overview</h1>
      <section aria-labelledby="apps-h">
        <h2 id="apps-h">Applications in production</h2>
        <Loading state={overview} what="applications">
          {(first) => <OverviewList first={first} />}
        </Loading>
      </section>
      <OrganizationsPage embedded />
    </>
  );
}

/** The first page's cards and those of the pages asked for since, in the order they came (each page failing first). */
function OverviewList({ first }: { first: OverviewPage }) {
  const [later, setLater] = useState<OverviewPage[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  // A new first page starts the list over.
  useEffect(() => setLater([]), [first]);
  const pages = [first, ...later];
  const seen = new Set<string>();
  // An application created between two pages can push one already shown onto the next: shown once.
  const applications = pages.flatMap((p) => p.applications).filter((a) => !seen.has(a.id) && seen.add(a.id));
  if (applications.length === 0) {
    return <p class="muted empty">No applications yet: create a project in an organization below, then an application in it.</p>;
  }
  const showMore = async () => {
    setBusy(true);
    setError(null);
    try {
      const next = await pageOf(pages.length + 1);
      setLater((loaded) => [...loaded, next]);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <ul class="overview-apps">
        {applications.map((a) => (
          <OverviewCard key={a.id} app={a} />
        ))}
      </ul>
      {pages.at(-1)!.truncated && (
        <p class="muted">
          {applications.length} applications shown, failing first on each page.{' '}
          <button type="button" disabled={busy} onClick={() => void showMore()}>
            {busy ? 'Loading…' : 'Show more applications'}
          </button>
        </p>
      )}
      <ErrorMessage message={error} />
    </>
  );
}

function OverviewCard({ app: a }: { app: OverviewApp }) {
  const d = a.last_deployment;
  return (
    <li class={`card ${CARD[a.state]}`} data-app={a.slug} data-state={a.state}>
      <Icon name={ICON[a.state]} />
      <div class="overview-body">
        <p class="card-title">
          <a href={`/apps/${a.organization_slug}/${a.project_slug}/${a.slug}`}>{a.name}</a>{' '}
          <span class="muted">
            {a.organization_slug} / {a.project_slug}
          </span>
        </p>
        <p>
          <strong>{STATE_TEXT[a.state]}</strong>
          {a.serving_release_version !== null && <> · serving v{a.serving_release_version}</>}
          {a.instances.total > 0 && (
            <>
              {' '}
              · {a.instances.healthy}/{a.instances.total} instances healthy
            </>
          )}
        </p>
        {a.problems.length > 0 && (
          <ul class="problems">
            {a.problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        )}
        <p class="muted">
          {d
            ? `Last deploy: v${d.release_version}${d.is_rollback ? ' (rollback)' : ''} ${d.status}, ${when(d.created)}, ${d.started_by ? `by ${d.started_by}` : 'automatic'}`
            : 'Never deployed'}
        </p>
      </div>
      <Sparkline requests={a.traffic.requests} errors={a.traffic.errors} label={`${a.name}, last hour`} />
    </li>
  );
}

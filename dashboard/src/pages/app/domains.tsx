import { useState } from 'preact/hooks';
import { api, ApiError, errorText, ok, type Schemas } from '../../api.js';
import { ConfirmAction } from '../../components/confirm.js';
import { ErrorMessage, Loading, when } from '../../components/ui.js';
import { useLoad } from '../../hooks.js';
import type { SectionProps } from './types.js';

type Domain = Schemas['Domain'];

const CERTIFICATE: Record<Domain['certificate']['status'], string> = {
  none: 'no certificate yet',
  pending: 'certificate being issued',
  issued: 'certificate issued',
  failed: 'certificate failed',
};

/** Custom domains: ownership proof (the TXT record to add), verification, and the certificate's state. */
export function DomainsSection({ app }: SectionProps) {
  const path = { params: { path: { application_id: app.id } } };
  const domains = useLoad(() => ok(api.GET('/v1/applications/{application_id}/domains', path)), [app.id]);
  const [fieldError, setFieldError] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const add = async (event: Event) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    try {
      await ok(
        api.POST('/v1/applications/{application_id}/domains', {
          ...path,
          body: { hostname: String(data.get('hostname')).trim(), environment: String(data.get('environment') || 'production') },
        }),
      );
      setFieldError(null);
      setError(null);
      form.reset();
      domains.reload();
    } catch (e) {
      // A refusal naming the hostname goes under the field; anything else under the form.
      const named = e instanceof ApiError && (e.fields.some((f) => f.field.includes('hostname')) || /hostname/i.test(e.message));
      setFieldError(named ? errorText(e) : null);
      setError(named ? null : errorText(e));
    }
  };
  return (
    <section class="panel" aria-labelledby="domains-h">
      <h2 id="domains-h" data-page-title>
        Domains
      </h2>
      <Loading state={domains} what="domains">
        {(list) =>
          list.length === 0 ? (
            <p class="muted empty">No custom domains yet: the application answers on its platform URL.</p>
          ) : (
            <ul class="plain domains">
              {list.map((d) => (
                <li key={d.id} data-domain={d.hostname} class="domain">
                  <p>
                    <strong>{d.hostname}</strong> <span class="env">{d.environment}</span>{' '}
                    <span class={`status ${d.verified ? 'status-ok' : 'status-busy'}`}>{d.verified ? 'verified' : 'not verified'}</span>{' '}
                    <span
                      class={`status ${d.certificate.status === 'issued' ? 'status-ok' : d.certificate.status === 'failed' ? 'status-error' : 'status-busy'}`}
                      data-testid="certificate"
                    >
                      {CERTIFICATE[d.certificate.status]}
                    </span>
                  </p>
                  {d.certificate.error && <p class="error">{d.certificate.error}</p>}
                  {d.certificate.not_after && <p class="muted">Certificate valid until {when(d.certificate.not_after)}</p>}
                  {!d.verified && (
                    <p class="muted">
                      Prove ownership: add a TXT record <code>{d.verification.record_name}</code> with the value{' '}
                      <code class="wrap">{d.verification.token}</code>, then verify.
                    </p>
                  )}
                  <div class="buttons">
                    {!d.verified && (
                      <ConfirmAction
                        label="Verify"
                        ariaLabel={`Verify ${d.hostname}`}
                        title={`Verify ${d.hostname}`}
                        environment={d.environment}
                        changes={[{ label: 'Ownership', from: 'not verified', to: 'checked against the TXT record' }]}
                        run={() =>
                          ok(
                            api.POST('/v1/applications/{application_id}/domains/{domain_id}/verify', {
                              params: { path: { application_id: app.id, domain_id: d.id } },
                            }),
                          )
                        }
                        done="Verified."
                        onDone={domains.reload}
                      />
                    )}
                    <ConfirmAction
                      label="Remove"
                      ariaLabel={`Remove ${d.hostname}`}
                      danger
                      title={`Remove ${d.hostname}`}
                      environment={d.environment}
                      changes={[{ label: 'Domain', from: d.hostname, to: 'no longer routed' }]}
                      run={() =>
                        ok(
                          api.DELETE('/v1/applications/{application_id}/domains/{domain_id}', {
                            params: { path: { application_id: app.id, domain_id: d.id } },
                          }),
                        )
                      }
                      done="Removed."
                      onDone={domains.reload}
                    />
                  </div>
                </li>
              ))}
            </ul>
          )
        }
      </Loading>
      <form aria-label="Add a domain" onSubmit={add}>
        <label>
          Hostname
          <input
            name="hostname"
            required
            placeholder="shop.example.com"
            aria-invalid={fieldError ? true : undefined}
            aria-describedby={fieldError ? 'hostname-error' : undefined}
          />
        </label>
        {fieldError && (
          <p class="error field-error" id="hostname-error" role="alert">
            {fieldError}
          </p>
        )}
        <label>
          Environment
          <input name="environment" value="production" required />
        </label>
        <button type="submit">Add domain</button>
        <ErrorMessage message={error} />
      </form>
    </section>
  );
}

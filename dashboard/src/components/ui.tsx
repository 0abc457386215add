import type { ComponentChildren } from 'preact';
import type { Loaded } from '../hooks.js';

export function ErrorMessage({ message }: { message: string | null | undefined }) {
  return message ? (
    <p class="error" role="alert">
      {message}
    </p>
  ) : null;
}

/** Loading, error (in the API's words) and empty states around a list or a record. */
export function Loading<T>({ state, empty, children }: { state: Loaded<T>; empty?: string; children: (data: T) => ComponentChildren }) {
  if (state.error && state.data === undefined) return <ErrorMessage message={state.error} />;
  if (state.data === undefined) return <p class="muted">Loading…</p>;
  if (empty && Array.isArray(state.data) && state.data.length === 0) return <p class="muted empty">{empty}</p>;
  return (
    <>
      <ErrorMessage message={state.error} />
      {children(state.data)}
    </>
  );
}

export function Status({ error, done, label }: { error: boolean; done: boolean; label?: string }) {
  const text = label ?? (error ? 'failed' : done ? 'done' : 'in progress');
  return <span class={`status ${error ? 'status-error' : done ? 'status-ok' : 'status-busy'}`}>{text}</span>;
}

export function SearchBox({ value, onInput, label }: { value: string; onInput: (v: string) => void; label: string }) {
  return (
    <input
      type="search"
      class="search"
      aria-label={label}
      placeholder={label}
      value={value}
      onInput={(e) => onInput((e.currentTarget as HTMLInputElement).value)}
    />
  );
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

export const matches = (query: string, ...fields: (string | null | undefined)[]) =>
  query.trim() === '' || fields.some((f) => f?.toLowerCase().includes(query.trim().toLowerCase()));

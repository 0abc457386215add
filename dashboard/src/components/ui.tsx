import type { ComponentChildren } from 'preact';
import type { Loaded } from '../hooks.js';

export function ErrorMessage({ message }: { message: string | null | undefined }) {
  return message ? (
    <p class="error" role="alert">
      {message}
    </p>
  ) : null;
}

/** Shown while the first answer is on its way: never mistaken for an empty list. */
export const LoadingNote = ({ what }: { what?: string }) => (
  <p class="muted loading" role="status" aria-busy="true">
    Loading{what ? ` ${what}` : ''}…
  </p>
);

/**
 * Loading, error (in the API's words), empty and stale states around a list or a record: four
 * different looks. Stale is old data kept on screen after a refresh failed, marked as such.
 */
export function Loading<T>({
  state,
  empty,
  what,
  children,
}: {
  state: Loaded<T>;
  empty?: string;
  what?: string;
  children: (data: T) => ComponentChildren;
}) {
  if (state.error && state.data === undefined) return <ErrorMessage message={state.error} />;
  if (state.data === undefined) return <LoadingNote what={what} />;
  if (empty && Array.isArray(state.data) && state.data.length === 0) return <p class="muted empty">{empty}</p>;
  return (
    <>
      {state.error && (
        <p class="stale" role="alert">
          Not up to date: {state.error}{' '}
          <button type="button" class="link" onClick={state.reload}>
            Retry
          </button>
        </p>
      )}
      {children(state.data)}
    </>
  );
}

/** How long something took, from two timestamps (or until now while it runs). */
export function duration(from: string | null | undefined, to: string | null | undefined): string {
  if (!from) return '—';
  const seconds = Math.max(0, Math.round(((to ? Date.parse(to) : Date.now()) - Date.parse(from)) / 1000));
  return seconds < 60
    ? `${seconds} s`
    : seconds < 3600
      ? `${Math.floor(seconds / 60)} min ${seconds % 60} s`
      : `${(seconds / 3600).toFixed(1)} h`;
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

/** A field's own error, placed under it and tied to it (aria-describedby `${name}-error`). */
export function FieldError({ name, message }: { name: string; message: string | undefined }) {
  return message ? (
    <p class="error field-error" id={`${name}-error`} role="alert">
      {message}
    </p>
  ) : null;
}

/** The attributes that mark a field as refused and point at its error text. */
export const invalidProps = (name: string, message: string | undefined) =>
  message ? { 'aria-invalid': true as const, 'aria-describedby': `${name}-error` } : {};

/** Which pipeline record a log text belongs to. */
export type RecordLogTable = 'images' | 'releases' | 'deployments';

export interface RecordLogText {
  table: RecordLogTable;
  recordId: string;
  /** One batch as stored: whole lines, each ending in a newline, already scrubbed of secret values. */
  text: string;
}

type Listener = (text: RecordLogText) => void;

const listeners = new Set<Listener>();

/**
 * Build, release and deploy logs as they are stored, for whoever ships them elsewhere (log
 * drains). Process-wide, like the records' writers; a listener must return at once and never throw.
 * Returns the unsubscribe.
 */
export function onRecordLogText(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Called by a record's log writer after a batch was stored (so a retried write is told once). */
export function tapRecordLog(text: RecordLogText): void {
  if (!text.text) return;
  for (const listener of listeners) {
    try {
      listener(text);
    } catch {
      /* a listener's bug never fails a build or a deploy */
    }
  }
}

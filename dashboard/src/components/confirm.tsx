import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { errorText } from '../api.js';
import { Icon, type IconName } from './icons.js';

/** One line of what an action will change: "Release  v3 → v2". */
export interface Change {
  label: string;
  from?: string | null;
  to: string;
}

interface Props {
  /** The button's text, and the dialog's confirm button unless `confirmLabel` says otherwise. */
  label: string;
  /** The button's accessible name when the text alone is ambiguous (e.g. "Revoke key ci"). */
  ariaLabel?: string;
  icon?: IconName;
  title: string;
  /** Where it happens, named in the dialog so production is never a surprise. */
  environment?: string | null;
  changes: Change[];
  note?: ComponentChildren;
  confirmLabel?: string;
  danger?: boolean;
  /** Why the action would be refused, known before asking: shown in the dialog, whose confirm button is then disabled. */
  blocked?: string | null;
  /** The action itself; the answer's message (or `done`) is shown in place. */
  run: () => Promise<unknown>;
  done: string;
  onDone?: () => void;
  class?: string;
}

type Phase = { kind: 'idle' } | { kind: 'asking' } | { kind: 'working' } | { kind: 'done' } | { kind: 'failed'; message: string };

/**
 * Every production-affecting or destructive action goes through here: the button opens a modal
 * dialog saying what will change (from → to, and the environment), Cancel (or Escape) changes
 * nothing, Confirm runs it; progress and the result (or the error with its request id) appear
 * right beside the button that started it.
 */
export function ConfirmAction(props: Props) {
  const [phase, setPhase] = useState<Phase>({ kind: 'idle' });
  const dialog = useRef<HTMLDialogElement>(null);
  const opener = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const d = dialog.current;
    if (!d) return;
    if (phase.kind === 'asking' && !d.open) d.showModal();
    if (phase.kind !== 'asking' && d.open) d.close();
  }, [phase.kind]);

  const cancel = () => {
    setPhase({ kind: 'idle' });
    opener.current?.focus();
  };
  const confirm = async () => {
    setPhase({ kind: 'working' });
    try {
      await props.run();
      setPhase({ kind: 'done' });
      props.onDone?.();
    } catch (e) {
      setPhase({ kind: 'failed', message: errorText(e) });
    }
  };
  const titleId = `confirm-${props.title.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <span class={`confirm-action${props.class ? ` ${props.class}` : ''}`}>
      <button
        ref={opener}
        type="button"
        class={props.danger ? 'danger' : undefined}
        aria-label={props.ariaLabel}
        disabled={phase.kind === 'working'}
        onClick={() => setPhase({ kind: 'asking' })}
      >
        {props.icon && <Icon name={props.icon} />}
        {props.label}
      </button>
      {phase.kind === 'working' && (
        <span class="progress" role="status">
          <Icon name="busy" class="spin" /> Working…
        </span>
      )}
      {phase.kind === 'done' && (
        <span class="result ok" role="status">
          <Icon name="ok" /> {props.done}
        </span>
      )}
      {phase.kind === 'failed' && (
        <span class="result error" role="alert">
          <Icon name="error" /> {phase.message}
        </span>
      )}
      <dialog
        ref={dialog}
        class="confirm"
        aria-labelledby={titleId}
        onCancel={(e) => {
          e.preventDefault();
          cancel();
        }}
      >
        {phase.kind === 'asking' && (
          <div class="confirm-body">
            <h2 id={titleId}>{props.title}</h2>
            {props.environment && (
              <p class={`environment${props.environment === 'production' ? ' production' : ''}`}>
                Environment: <strong>{props.environment}</strong>
              </p>
            )}
            <dl class="changes" aria-label="What will change">
              {props.changes.map((c) => (
                <>
                  <dt key={`${c.label}-dt`}>{c.label}</dt>
                  <dd key={`${c.label}-dd`}>
                    {c.from !== undefined && (
                      <>
                        <span class="from">{c.from ?? 'nothing'}</span> →{' '}
                      </>
                    )}
                    <strong class="to">{c.to}</strong>
                  </dd>
                </>
              ))}
            </dl>
            {props.note && <p class="muted">{props.note}</p>}
            {props.blocked && (
              <p class="error" role="alert">
                Refused: {props.blocked}
              </p>
            )}
            <div class="buttons">
              <button type="button" onClick={cancel} autofocus>
                Cancel
              </button>
              <button
                type="button"
                class={props.danger ? 'danger primary' : 'primary'}
                disabled={Boolean(props.blocked)}
                onClick={() => void confirm()}
              >
                {props.confirmLabel ?? props.label}
              </button>
            </div>
          </div>
        )}
      </dialog>
    </span>
  );
}

import { useState } from 'preact/hooks';

/** A command line to copy into a terminal, with a Copy button (the clipboard may be refused: the line stays selectable). */
export function CopyLine({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  const copy = () =>
    navigator.clipboard
      ?.writeText(text)
      .then(() => setCopied(true))
      .catch(() => setCopied(false));
  return (
    <p class="copy-line">
      <code aria-label={label}>{text}</code>{' '}
      <button type="button" class="link" aria-label={`Copy: ${text}`} onClick={() => void copy()}>
        {copied ? 'Copied' : 'Copy'}
      </button>
    </p>
  );
}

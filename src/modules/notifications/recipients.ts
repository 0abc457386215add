/** Most recipients of one e-mail channel. */
export const MAX_RECIPIENTS = 20;

// One plain address: no display name, comment, quoting or header injection (CR/LF, commas, angle brackets).
const ADDRESS =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

export class BadRecipients extends Error {}

/**
 * An e-mail channel's address, `mailto:ops@example.com,oncall@example.com`, as its recipients.
 * Throws BadRecipients (a message fit for the caller) on anything else: a query (`?cc=`, `?body=`)
 * could add recipients or text, so none is taken.
 */
export function recipientsOf(text: string): string[] {
  if (!text.toLowerCase().startsWith('mailto:')) throw new BadRecipients('an email channel’s url is mailto:address[,address…]');
  const rest = text.slice('mailto:'.length);
  if (rest.includes('?') || rest.includes('#')) throw new BadRecipients('a mailto: url takes only addresses (no ?subject=, ?cc=)');
  let decoded: string;
  try {
    decoded = decodeURIComponent(rest);
  } catch {
    throw new BadRecipients('the mailto: url is not well encoded');
  }
  const addresses = decoded
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);
  if (addresses.length === 0) throw new BadRecipients('a mailto: url needs at least one address');
  if (addresses.length > MAX_RECIPIENTS) throw new BadRecipients(`at most ${MAX_RECIPIENTS} addresses`);
  for (const a of addresses)
    if (a.length > 254 || !ADDRESS.test(a)) throw new BadRecipients(`"${a.slice(0, 80)}" is not an e-mail address`);
  return [...new Set(addresses.map((a) => a.toLowerCase()))];
}

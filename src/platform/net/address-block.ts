import ipaddr from 'ipaddr.js';

/**
 * The unit a client address is limited by: an IPv4 address itself (IPv4-mapped IPv6 written as
 * IPv4), an IPv6 address by its /64. One subscriber usually holds a whole /64 and can rotate
 * through billions of addresses in it, so a limit per IPv6 address limits nothing.
 */
export function addressBlock(address: string): string {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address.replace(/%.*$/, ''));
  } catch {
    return address;
  }
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}

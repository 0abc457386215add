import ipaddr from 'ipaddr.js';

/**
 * The address rule shared by git sources and outbound webhooks: only globally routed
 * unicast addresses, never loopback, private, link-local, CGNAT, ULA, multicast…
 * (an IPv4-mapped IPv6 address is judged as the IPv4 address it carries).
 */
export function isPublicAddress(address: string): boolean {
  try {
    let parsed = ipaddr.parse(address);
    if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
    return parsed.range() === 'unicast';
  } catch {
    return false;
  }
}

import ipaddr from 'ipaddr.js';

/**
 * IPv6 prefixes whose addresses carry an IPv4 address in their low 32 bits: a connection to
 * one may end at that IPv4 address (the host's own stack for mapped and compatible forms, a
 * translator for the others), so it is judged as that address.
 */
const EMBEDS_IPV4_LOW = [
  ipaddr.parseCIDR('::ffff:0:0/96'), // IPv4-mapped (RFC 4291)
  ipaddr.parseCIDR('::/96'), // IPv4-compatible, deprecated (RFC 4291): `::127.0.0.1`, `::7f00:1`
  ipaddr.parseCIDR('::ffff:0:0:0/96'), // IPv4-translated (RFC 6145)
  ipaddr.parseCIDR('64:ff9b::/96'), // NAT64 well-known prefix (RFC 6052)
] as const;
/** 6to4 (RFC 3056): the IPv4 address of the site's relay sits in bits 16–47. */
const SIX_TO_FOUR = ipaddr.parseCIDR('2002::/16');

/**
 * The IPv4 address an IPv6 address stands for, when it is one of the forms that embed one
 * (mapped, compatible, translated, NAT64, 6to4); null for any other IPv6 address.
 */
export function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  const parts = address.parts;
  if (EMBEDS_IPV4_LOW.some((range) => address.match(range)))
    return new ipaddr.IPv4([parts[6]! >> 8, parts[6]! & 0xff, parts[7]! >> 8, parts[7]! & 0xff]);
  if (address.match(SIX_TO_FOUR)) return new ipaddr.IPv4([parts[1]! >> 8, parts[1]! & 0xff, parts[2]! >> 8, parts[2]! & 0xff]);
  return null;
}

/**
 * The address rule shared by git sources and outbound webhooks: only globally routed
 * unicast addresses, never loopback, private, link-local, CGNAT, ULA, multicast… An IPv6
 * address that embeds an IPv4 address (`::ffff:127.0.0.1`, `::7f00:1`, `64:ff9b::7f00:1`,
 * `2002:7f00:1::`…) is judged as that IPv4 address; the local-use NAT64 prefix
 * (`64:ff9b:1::/48`), Teredo and every other special IPv6 range are refused.
 */
export function isPublicAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  } catch {
    return false;
  }
  if (address.includes('%')) return false; // a zone index names a local interface
  if (parsed.kind() === 'ipv6') {
    const ipv6 = parsed as ipaddr.IPv6;
    // `::` and `::1` lie in the compatible range too; their own ranges refuse them.
    if (ipv6.range() === 'unspecified' || ipv6.range() === 'loopback') return false;
    const ipv4 = embeddedIPv4(ipv6);
    if (ipv4) return ipv4.range() === 'unicast';
  }
  return parsed.range() === 'unicast';
}

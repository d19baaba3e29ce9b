import ipaddr from "ipaddr.js";

/** A dotted-quad IPv4 address with no leading zeros, shorthand or surrounding space. */
export function isIpv4(value: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(value);
}

export interface Ipv4Cidr {
  address: string;
  prefix: number;
  network: string;
  broadcast: string;
}

/** Parses `a.b.c.d/nn`; undefined when it is not exactly that shape. */
export function parseIpv4Cidr(value: string): Ipv4Cidr | undefined {
  const match = /^([^/]+)\/(\d{1,2})$/.exec(value);
  if (!match?.[1] || !match[2] || !isIpv4(match[1])) return undefined;
  const prefix = Number(match[2]);
  if (prefix > 32 || String(prefix) !== match[2]) return undefined;
  return {
    address: match[1],
    prefix,
    network: ipaddr.IPv4.networkAddressFromCIDR(value).toString(),
    broadcast: ipaddr.IPv4.broadcastAddressFromCIDR(value).toString(),
  };
}

/** Whether `address` lies inside the subnet of `cidr`. */
export function inSubnet(address: string, cidr: Ipv4Cidr): boolean {
  return ipaddr.IPv4.parse(address).match(ipaddr.IPv4.parse(cidr.network), cidr.prefix);
}

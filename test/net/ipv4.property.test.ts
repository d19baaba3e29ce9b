import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { inSubnet, isIpv4, parseIpv4Cidr } from "../../src/net/ipv4.js";
import { anyText, dotted, dottedQuadValue } from "../support/generators.js";

const RUNS = { numRuns: 500 };

const maskOf = (prefix: number) => (prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0);

const address = fc.integer({ min: 0, max: 0xffffffff });

/** Dotted quads that are almost right: leading zeros, big octets, spaces, other separators. */
const nearlyDottedQuad = fc.oneof(
  fc.ipV4(),
  fc.ipV4Extended(),
  fc
    .tuple(fc.array(fc.integer({ min: 0, max: 999 }), { minLength: 1, maxLength: 6 }), fc.boolean())
    .map(([octets, pad]) =>
      octets.map((o) => (pad ? String(o).padStart(3, "0") : String(o))).join("."),
    ),
  fc
    .tuple(fc.ipV4(), fc.constantFrom(" ", "\t", "\n", ".", "/", "\u00a0", "0"))
    .map(([ip, extra]) => `${ip}${extra}`),
  fc
    .tuple(fc.ipV4(), fc.constantFrom(" ", "0", "+", "\u0660"))
    .map(([ip, extra]) => `${extra}${ip}`),
  anyText(),
);

describe("isIpv4", () => {
  it("accepts exactly the dotted quads with octets 0–255 and no leading zeros", () => {
    fc.assert(
      fc.property(nearlyDottedQuad, (text) => {
        expect(isIpv4(text)).toBe(dottedQuadValue(text) !== undefined);
      }),
      RUNS,
    );
  });

  it("accepts every address written the canonical way", () => {
    fc.assert(
      fc.property(address, (value) => {
        expect(isIpv4(dotted(value))).toBe(true);
      }),
      RUNS,
    );
  });
});

describe("parseIpv4Cidr", () => {
  it("never throws, and whatever it accepts is the text it was given, read back", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc
            .tuple(
              nearlyDottedQuad,
              fc.string({
                unit: fc.constantFrom("0", "1", "2", "3", "8", "9", "/", " "),
                maxLength: 4,
              }),
            )
            .map(([ip, prefix]) => `${ip}/${prefix}`),
          anyText(),
        ),
        (text) => {
          const cidr = parseIpv4Cidr(text);
          if (cidr === undefined) return;
          expect(`${cidr.address}/${cidr.prefix}`).toBe(text);
          expect(isIpv4(cidr.address)).toBe(true);
          expect(cidr.prefix).toBeGreaterThanOrEqual(0);
          expect(cidr.prefix).toBeLessThanOrEqual(32);
        },
      ),
      RUNS,
    );
  });

  it("computes the network and broadcast addresses of every address and prefix", () => {
    fc.assert(
      fc.property(address, fc.integer({ min: 0, max: 32 }), (value, prefix) => {
        const cidr = parseIpv4Cidr(`${dotted(value)}/${prefix}`);
        const mask = maskOf(prefix);
        expect(cidr).toEqual({
          address: dotted(value),
          prefix,
          network: dotted((value & mask) >>> 0),
          broadcast: dotted(((value & mask) | (~mask >>> 0)) >>> 0),
        });
      }),
      RUNS,
    );
  });

  it("rejects a prefix written with a leading zero or above 32", () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.integer({ min: 0, max: 99 }), fc.boolean(), (ip, prefix, pad) => {
        const written = pad ? String(prefix).padStart(2, "0") : String(prefix);
        const accepted = parseIpv4Cidr(`${ip}/${written}`) !== undefined;
        expect(accepted).toBe(prefix <= 32 && written === String(prefix));
      }),
      RUNS,
    );
  });
});

describe("inSubnet", () => {
  it("says an address is inside exactly when it shares the subnet's leading bits", () => {
    fc.assert(
      fc.property(address, fc.integer({ min: 0, max: 32 }), address, (value, prefix, other) => {
        const cidr = parseIpv4Cidr(`${dotted(value)}/${prefix}`)!;
        const mask = maskOf(prefix);
        expect(inSubnet(dotted(other), cidr)).toBe((other & mask) >>> 0 === (value & mask) >>> 0);
        expect(inSubnet(cidr.network, cidr)).toBe(true);
        expect(inSubnet(cidr.broadcast, cidr)).toBe(true);
      }),
      RUNS,
    );
  });
});

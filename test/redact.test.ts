import { describe, expect, it } from "vitest";
import { createRedactor, REDACTED } from "../src/redact.js";
import { TEST_SECRETS } from "./support/secrets.js";

describe("createRedactor", () => {
  it("removes known secrets by value, also URL-encoded", () => {
    const redact = createRedactor([TEST_SECRETS.webhookSecret]);
    expect(redact(`token=${TEST_SECRETS.webhookSecret}&x=1`)).toBe(`token=${REDACTED}&x=1`);
    const odd = "s3cr3t/with+chars";
    redact.add(odd);
    expect(redact(`q=${encodeURIComponent(odd)}`)).toBe(`q=${REDACTED}`);
  });

  it.each([
    ["a GitLab personal access token", "glpat-AbCdEf1234567890xyz"],
    ["a Slack bot token", "xoxb-123-456-AbCdEf123456"],
    ["a Slack app token", "xapp-1-A01-123-abcdef012345"],
    ["a Vault service token", "hvs.CAESIAbCdEf0123456789abcdef"],
  ])("removes %s by its shape", (_label, token) => {
    expect(createRedactor()(`the token is ${token}.`)).toBe(`the token is ${REDACTED}.`);
  });

  it("removes the secret of a Proxmox API token and keeps who it belongs to", () => {
    const text = "PVEAPIToken=terraform@pve!vmbot=0c7b1a52-3c1f-4a0e-9f5a-2d4c8e6b1f00";
    expect(createRedactor()(text)).toBe(`PVEAPIToken=terraform@pve!vmbot=${REDACTED}`);
  });

  it("leaves ordinary text alone", () => {
    const text = "Plan: 1 to add, 0 to change, 0 to destroy. web-01 on pve";
    expect(createRedactor(["abc"])(text)).toBe(text);
  });
});

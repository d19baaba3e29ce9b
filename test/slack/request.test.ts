import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { checkSlackBody, RefusedRequest, verifySlackSignature } from "../../src/slack/request.js";

const SECRET = "signing-secret-for-unit-tests";
const NOW = 1_800_000_000;
const body = Buffer.from("command=%2Fvm&text=help");

function sign(timestamp: number | string, text = body): string {
  return `v0=${createHmac("sha256", SECRET).update(`v0:${timestamp}:${text.toString()}`).digest("hex")}`;
}

function refusal(run: () => void): number | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    if (error instanceof RefusedRequest) return error.status;
    throw error;
  }
}

const verify =
  (timestamp: number | string, signature = sign(timestamp)) =>
  () => {
    verifySlackSignature({
      signingSecret: SECRET,
      signature,
      timestamp: String(timestamp),
      body,
      nowSeconds: NOW,
    });
  };

describe("verifySlackSignature", () => {
  it("accepts a signature up to five minutes old or ahead, and refuses one second more either way", () => {
    expect(refusal(verify(NOW))).toBeUndefined();
    expect(refusal(verify(NOW - 300))).toBeUndefined();
    expect(refusal(verify(NOW + 300))).toBeUndefined();
    expect(refusal(verify(NOW - 301))).toBe(401);
    expect(refusal(verify(NOW + 301))).toBe(401);
    expect(refusal(verify(NOW + 365 * 24 * 3600))).toBe(401);
  });

  it("refuses a wrong, truncated, other-version or missing signature and a timestamp that is no number", () => {
    const good = sign(NOW);
    expect(refusal(verify(NOW, `${good.slice(0, -1)}0`))).toBe(401);
    expect(refusal(verify(NOW, good.slice(0, 20)))).toBe(401);
    expect(refusal(verify(NOW, good.replace("v0=", "v1=")))).toBe(401);
    expect(refusal(verify("1e9", sign("1e9")))).toBe(401);
    expect(
      refusal(() => {
        verifySlackSignature({
          signingSecret: SECRET,
          signature: undefined,
          timestamp: String(NOW),
          body,
          nowSeconds: NOW,
        });
      }),
    ).toBe(401);
  });
});

describe("checkSlackBody", () => {
  const form = "application/x-www-form-urlencoded";
  it("takes forms, forms whose payload is a JSON object, and JSON objects", () => {
    expect(
      refusal(() => {
        checkSlackBody(form, Buffer.from("command=%2Fvm"));
      }),
    ).toBeUndefined();
    expect(
      refusal(() => {
        checkSlackBody(form, Buffer.from("payload=%7B%7D"));
      }),
    ).toBeUndefined();
    expect(
      refusal(() => {
        checkSlackBody("application/json", Buffer.from("{}"));
      }),
    ).toBeUndefined();
  });

  it.each([
    [form, "payload=null", 400],
    [form, "payload=%5B%5D", 400],
    [form, "payload=%22x%22", 400],
    [form, "payload=1&payload=2", 400],
    ["application/json", "null", 400],
    ["application/json", "[]", 400],
    ["application/json", "true", 400],
    ["text/plain", "{}", 415],
    [undefined, "{}", 415],
  ])("refuses %s %s with %i", (type, text, status) => {
    expect(
      refusal(() => {
        checkSlackBody(type, Buffer.from(text));
      }),
    ).toBe(status);
  });
});

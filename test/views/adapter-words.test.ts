/**
 * The adapters (GitLab, Vault, Proxmox) return typed errors and data, never Slack text: every
 * word a person reads is built in `src/views/`. These checks read the adapters' sources.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = resolve(import.meta.dirname, "../../src");
const ADAPTERS = ["gitlab", "vault", "proxmox"];

/** Every TypeScript file under `dir`, as [path from src/, text]. */
function sources(dir: string): [string, string][] {
  return readdirSync(join(SRC, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts")
      ? [[path, readFileSync(join(SRC, path), "utf8")] as [string, string]]
      : [];
  });
}

/** The code without its comments (block comments, and lines that are a `//` comment). */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");

/** Slack's `<url|label>`, `<${url}|…>`, `<@U…>`, `<#C…>` and `<!here>`. */
const MRKDWN_LINK = /<(?:https?:\/\/|mailto:|\$\{|[@#!])[^<>\n]*>/;
/** `*bold*` as mrkdwn writes it: a star, a word, a star. */
const MRKDWN_BOLD = /(?:^|[\s"'`(])\*[A-Za-z][^*\n]*?[A-Za-z0-9.:)!?]\*(?=[\s"'`.,:;)]|$)/m;
/** Slack escaping or any view imported. */
const SLACK_IMPORT = /from\s+["'][^"']*\/(?:slack|views|messages)\/[^"']*["']/;

const found = (pattern: RegExp) =>
  ADAPTERS.flatMap((dir) => sources(dir))
    .filter(([, text]) => pattern.test(code(text)))
    .map(([path]) => path);

describe("the GitLab, Vault and Proxmox adapters", () => {
  it("read their own sources (the check is not vacuous)", () => {
    for (const dir of ADAPTERS) expect(sources(dir).length).toBeGreaterThan(0);
  });

  it("import no Slack escaping and no view", () => {
    expect(SLACK_IMPORT.test('import { escapeMrkdwn } from "../slack/mrkdwn.js";')).toBe(true);
    expect(found(SLACK_IMPORT)).toEqual([]);
    expect(found(/escapeMrkdwn|unescapeSlack/)).toEqual([]);
  });

  it("write no Slack link", () => {
    expect(MRKDWN_LINK.test("`see <${url}|the pipeline>`")).toBe(true);
    expect(MRKDWN_LINK.test('"ask <@U123> to approve"')).toBe(true);
    expect(MRKDWN_LINK.test("Promise<string | undefined>")).toBe(false);
    expect(found(MRKDWN_LINK)).toEqual([]);
  });

  it("write no bold text", () => {
    expect(MRKDWN_BOLD.test("`*Plan failed* for ${name}`")).toBe(true);
    expect(MRKDWN_BOLD.test("const wait = grantedSeconds * 800 * 2;")).toBe(false);
    expect(found(MRKDWN_BOLD)).toEqual([]);
  });
});

/**
 * Removes secrets from text by value (every secret the bot knows) and by shape (tokens of the
 * systems it talks to), so neither a log line nor a Slack message can carry one.
 */

export const REDACTED = "[redacted]";

/** Shapes of credentials: GitLab, Slack, Vault, and the secret part of a PVE API token. */
const TOKEN_PATTERNS: readonly RegExp[] = [
  /\bglpat-[\w-]{8,}/g,
  /\bgl(?:oas|dt|rt|cbt|ptt|ft|imt|agent|wt|soat|ffct)-[\w-]{8,}/g,
  /\bxox[abposr]-[\w-]{8,}/g,
  /\bxapp-[\w-]{8,}/g,
  /\bhv[sbr]\.[\w-]{16,}/g,
  /(?<=![\w.-]{1,64}=)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi,
];

export type Redactor = ((text: string) => string) & {
  /** Adds a secret learnt at run time (e.g. read from Vault). */
  add(secret: string): void;
};

export function createRedactor(initial: Iterable<string> = []): Redactor {
  const secrets = new Set<string>();
  const add = (secret: string) => {
    // Very short values would redact ordinary words; nothing the bot holds is that short.
    if (secret.length >= 6) secrets.add(secret);
  };
  for (const secret of initial) add(secret);

  const redact = (text: string): string => {
    let out = text;
    for (const secret of secrets) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED);
      // Secrets also travel JSON- or URL-encoded.
      const encoded = encodeURIComponent(secret);
      if (encoded !== secret && out.includes(encoded)) out = out.split(encoded).join(REDACTED);
    }
    for (const pattern of TOKEN_PATTERNS) out = out.replace(pattern, REDACTED);
    return out;
  };
  return Object.assign(redact, { add });
}

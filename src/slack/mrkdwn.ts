/**
 * Escapes text from outside (people, GitLab, Terraform) so Slack shows it and never parses it:
 * `&`, `<` and `>` as entities, and a backtick, which mrkdwn cannot escape, as a quote, so that
 * it can neither open a code span nor close one the bot opened around the text.
 */
export function escapeMrkdwn(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/`/g, "'");
}

/** A link whose label is escaped; the URL must come from a trusted system. */
export function link(url: string, label: string): string {
  return `<${url.replace(/[<>|]/g, encodeURIComponent)}|${escapeMrkdwn(label).replace(/\|/g, "¦")}>`;
}

/**
 * Cuts text to `max` characters, marking the cut. Never inside an entity of escaped text (`&am…`
 * would show as typed) or between the two halves of a character outside the BMP.
 */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  // A high surrogate left at the end is half of a character cut in two, or one that had no other
  // half in the text: either way nothing a person can read, and invalid where it ends the text.
  const kept = text
    .slice(0, max - 1)
    .replace(/&[a-z]{0,3}$/, "")
    .replace(/[\ud800-\udbff]+$/, "");
  return `${kept}…`;
}

/** Undoes the `&amp;`, `&lt;` and `&gt;` Slack puts in slash-command text. */
export function unescapeSlack(text: string): string {
  return text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}

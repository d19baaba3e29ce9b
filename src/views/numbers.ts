/**
 * A whole number as en-US writes it, its thousands grouped by commas (`1,048,576`): what
 * `toLocaleString("en-US")` gives, without Intl. The first Intl call in a process loads ICU's
 * number formats (20 ms on a quiet machine, 50–70 ms under load), and the bot's first request
 * message after a start would pay it. Anything but a safe integer goes to Intl as before.
 */
export function wholeNumberWords(n: number): string {
  if (!Number.isSafeInteger(n)) return n.toLocaleString("en-US");
  const digits = String(Math.abs(n));
  let grouped = digits.slice(0, digits.length % 3 || 3);
  for (let at = grouped.length; at < digits.length; at += 3) {
    grouped += `,${digits.slice(at, at + 3)}`;
  }
  return n < 0 || Object.is(n, -0) ? `-${grouped}` : grouped;
}

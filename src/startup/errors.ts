/** A problem that stops the start, in words for the person starting the bot. */
export class StartupError extends Error {
  override name = "StartupError";
}

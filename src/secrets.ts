/**
 * A credential the bot hands to another system, wherever it comes from: the environment (fixed
 * for the life of the process) or Vault (re-read when the system it unlocks refuses it, so that
 * a rotated token is picked up without a restart).
 */
export interface SecretSource {
  /** The current value. */
  get(): Promise<string>;
  /**
   * The system this secret unlocks refused `used`, the value the refused call sent: read it
   * again. True when the value now differs, so the call is worth one more try; false when it is
   * the same (or cannot change). Comparing with what was sent, not with the cache, keeps two
   * calls refused at once from hiding a rotation from each other.
   */
  refresh(used: string): Promise<boolean>;
}

/** A secret from the environment: it never changes, so a refusal is final. */
export function fixedSecret(value: string): SecretSource {
  return {
    get: () => Promise.resolve(value),
    refresh: () => Promise.resolve(false),
  };
}

import { z } from "zod";

/**
 * Vault's answers as node-vault hands them over, checked before the bot uses them: logins and
 * token look-ups (for how long the token lives), KV version 2 reads, and the errors it throws.
 */

/** A token's life in seconds; 0 for one that never expires, or when Vault gives none. */
const SecondsSchema = z.number().positive().catch(0);

/** The `auth` block of a login or a renewal. */
export const AuthBlockSchema = z.object({
  client_token: z.string().optional().catch(undefined),
  lease_duration: SecondsSchema,
  renewable: z.boolean().optional().catch(undefined),
});
export type AuthBlock = z.infer<typeof AuthBlockSchema>;

/** `POST auth/<method>/login` and `POST auth/token/renew-self`. */
export const LoginAnswerSchema = z.object({ auth: AuthBlockSchema.nullish().catch(undefined) });

/** `GET auth/token/lookup-self`: the token's remaining life and whether it can be renewed. */
export const TokenLookupSchema = z.object({
  data: z
    .object({ ttl: SecondsSchema, renewable: z.boolean().optional().catch(undefined) })
    .nullish()
    .catch(undefined),
});

/** `GET <mount>/data/<path>` of a KV version 2 mount: the secret's keys and values. */
export const KvSecretSchema = z.object({
  data: z.object({ data: z.record(z.string(), z.unknown()) }),
});

/** What node-vault throws when Vault answered with an error status. */
export const VaultErrorAnswerSchema = z.object({
  response: z.object({
    statusCode: z.number().int(),
    body: z
      .object({ errors: z.array(z.unknown()).optional().catch(undefined) })
      .nullish()
      .catch(undefined),
  }),
});
export type VaultErrorAnswer = z.infer<typeof VaultErrorAnswerSchema>;

/** The network error code node-vault's request carries, e.g. ECONNRESET or ECONNABORTED. */
export const ErrorCodeSchema = z.object({ code: z.string() });

/** Vault's status in a thrown error, when Vault answered. */
export function statusOf(error: unknown): number | undefined {
  const parsed = VaultErrorAnswerSchema.safeParse(error);
  return parsed.success ? parsed.data.response.statusCode : undefined;
}

/** The network error code of a thrown error, when it has one. */
export function errorCodeOf(error: unknown): string | undefined {
  const parsed = ErrorCodeSchema.safeParse(error);
  return parsed.success ? parsed.data.code : undefined;
}

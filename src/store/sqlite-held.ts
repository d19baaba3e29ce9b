import { z } from "zod";
import { VmSpecSchema } from "../vm/spec.js";

/** What the SQLite store reads to match a new request against the ones in flight. */

/** `?, ?, ?` for `count` parameters. */
export const placeholders = (count: number) => Array.from({ length: count }, () => "?").join(", ");

/** A VM's address without its prefix, in SQL: `192.168.1.50/24` → `192.168.1.50`. */
export const ADDRESS_SQL =
  "substr(json_extract(spec, '$.ip'), 1, instr(json_extract(spec, '$.ip') || '/', '/') - 1)";

export const HeldRowSchema = z.object({
  id: z.string(),
  requester: z.string(),
  spec: z.string().transform((text) => VmSpecSchema.parse(JSON.parse(text))),
});

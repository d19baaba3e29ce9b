/** Authentication, as pveproxy does it: API tokens, their rotation and revocation. */
import { type RecordedRequest } from "../http.js";
import { type Reply, unauthorized } from "./answers.js";
import { TOKEN_ID } from "./nodes.js";
import { type TokenState } from "./types.js";

/** Perl's truth for a string: defined, not empty, not "0". */
function perlTrue(value: string | undefined): value is string {
  return value !== undefined && value !== "" && value !== "0";
}

/** URI::Escape's uri_unescape: %XX sequences only (no `+`). */
function uriUnescape(value: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i += 1) {
    const hex = value.slice(i + 1, i + 3);
    if (value[i] === "%" && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(value[i] ?? "", "utf8"));
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

/** PVE::APIServer::Formatter::extract_auth_value. */
function extractAuthValue(header: string | undefined, key: string): string | undefined {
  if (header === undefined) return undefined;
  const value = new RegExp(String.raw`(?:^|\s)${key}(?:=| )([^;]*)`).exec(header)?.[1];
  return perlTrue(value) ? uriUnescape(value) : value;
}

interface TokenRecord {
  userid: string;
  tokenName: string;
  secret: string;
}

export function parseToken(token: string): TokenRecord {
  const match = /^(.*)=(.*)$/.exec(token);
  const tokenId = TOKEN_ID.exec(match?.[1] ?? "");
  if (!match || !tokenId) {
    // The secret stays out of the message.
    const shown = match ? `${match[1]}=…` : "a value without =";
    throw new Error(`the fake Proxmox needs a token like user@realm!tokenid=secret, not ${shown}`);
  }
  return { userid: tokenId[1] ?? "", tokenName: tokenId[4] ?? "", secret: match[2] ?? "" };
}

/** PVE::AccessControl::verify_token against the one token the fake knows; the failure, if any. */
function verifyToken(apiToken: string, known: TokenRecord, state: TokenState): string | undefined {
  const match = /^(.*)=(.*)$/.exec(apiToken);
  if (!match) return "no tokenid specified";
  const tokenId = match[1] ?? "";
  const parts = TOKEN_ID.exec(tokenId);
  if (!parts) {
    return `'${tokenId}' is not a valid token ID - not able to split into user and token parts`;
  }
  const userid = parts[1] ?? "";
  const tokenName = parts[4] ?? "";
  if (userid !== known.userid) return `no such user ('${userid}')`;
  if (state === "user-disabled") return `user '${userid}' is disabled`;
  if (tokenName !== known.tokenName || state === "deleted") {
    return `no such token '${tokenName}' for user '${userid}'`;
  }
  if (state === "expired") return `token '${tokenName}' access expired`;
  if (match[2] !== known.secret) return "invalid token value!";
  return undefined;
}

/** pveproxy's header stage: the 401 to answer, or undefined when the caller is authenticated. */
export function authenticate(
  req: RecordedRequest,
  known: TokenRecord,
  state: TokenState,
): Reply | undefined {
  const authorization = req.headers.authorization;
  // A ticket (cookie first, then the Authorization header) wins over a token. The fake issues no
  // tickets, so any ticket is one PVE::Ticket::verify_rsa_ticket refuses.
  let ticket = extractAuthValue(req.headers.cookie, "PVEAuthCookie");
  if (!perlTrue(ticket)) ticket = extractAuthValue(authorization, "PVEAuthCookie");
  if (perlTrue(ticket)) return unauthorized("permission denied - invalid PVE ticket");
  const apiToken = extractAuthValue(authorization, "PVEAPIToken");
  if (!perlTrue(apiToken)) return unauthorized("No ticket");
  const failure = verifyToken(apiToken, known, state);
  return failure === undefined ? undefined : unauthorized(failure);
}

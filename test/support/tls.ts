import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const TLS_DIR = new URL("./tls/", import.meta.url);

/** The test certificates in `test/support/tls/` (see its README): never trust them elsewhere. */
export const PROXMOX_TEST_TLS = {
  /** The test cluster CA, what `PROXMOX_CA_FILE` would point at. */
  caFile: fileURLToPath(new URL("ca.pem", TLS_DIR)),
  /** The node certificate, for 127.0.0.1, ::1, localhost and pve1. */
  certFile: fileURLToPath(new URL("server.pem", TLS_DIR)),
  keyFile: fileURLToPath(new URL("server-key.pem", TLS_DIR)),
} as const;

/**
 * The simulated node's TLS material: the node certificate signed by the test CA, as pveproxy
 * serves `pve-ssl.pem`; `chain: true` appends the CA certificate, as a custom chain would.
 */
export function proxmoxTestTls(options: { chain?: boolean } = {}): { key: string; cert: string } {
  const cert = readFileSync(PROXMOX_TEST_TLS.certFile, "utf8");
  return {
    key: readFileSync(PROXMOX_TEST_TLS.keyFile, "utf8"),
    cert: options.chain === true ? cert + readFileSync(PROXMOX_TEST_TLS.caFile, "utf8") : cert,
  };
}

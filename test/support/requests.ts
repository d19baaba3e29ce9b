import type { VmSpec } from "../../src/vm/spec.js";

/** A valid request as the form produces it with the platform defaults. */
export const SAMPLE_SPEC: VmSpec = {
  name: "web-01",
  node: "pve",
  templateId: 9000,
  templateName: "ubuntu",
  cores: 2,
  memoryMb: 2048,
  diskGb: 20,
  ip: "192.168.1.50/24",
  gateway: "192.168.1.1",
  dns: "192.168.1.1",
  vmId: 0,
  vlanId: 0,
};

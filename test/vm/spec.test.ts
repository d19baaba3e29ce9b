import { describe, expect, it } from "vitest";
import { pipelineParams, validateVmForm, type VmFormValues } from "../../src/vm/spec.js";

const options = {
  nodes: ["pve", "pve2"],
  templates: [
    { name: "ubuntu", id: 9000 },
    { name: "debian", id: 9001 },
  ],
};

const valid: VmFormValues = {
  name: "web-01",
  node: "pve",
  template: "9000",
  cores: "2",
  memory: "2048",
  disk: "20",
  ip: "192.168.1.50/24",
  gateway: "192.168.1.1",
  dns: "192.168.1.1",
};

type Row = [string, VmFormValues, { ok: true } | { field: keyof VmFormValues; message: string }];

const OK = { ok: true } as const;
const bad = (field: keyof VmFormValues, message: string) => ({ field, message });

const table: Row[] = [
  ["the platform defaults", {}, OK],
  ["a one-character name", { name: "a" }, OK],
  ["a 63-character name", { name: "a".repeat(63) }, OK],
  ["a name of digits", { name: "123" }, OK],
  ["a name with spaces around it", { name: "  web-01  " }, OK],
  [
    "a blank name",
    { name: undefined },
    bad("name", "Enter a name: 1 to 63 characters of a-z, 0-9 and -."),
  ],
  [
    "a 64-character name",
    { name: "a".repeat(64) },
    bad("name", "The name is 64 characters long; a hostname has at most 63 (a-z, 0-9 and -)."),
  ],
  [
    "an underscore",
    { name: "web_01" },
    bad("name", 'The name may only contain a-z, 0-9 and - (not "_").'),
  ],
  [
    "a dot",
    { name: "web.example" },
    bad("name", 'The name may only contain a-z, 0-9 and - (not ".").'),
  ],
  [
    "a space inside",
    { name: "web 01" },
    bad("name", "The name may only contain a-z, 0-9 and - (not space)."),
  ],
  [
    "an accented letter",
    { name: "café" },
    bad("name", 'The name may only contain a-z, 0-9 and - (not "é").'),
  ],
  [
    "a leading hyphen",
    { name: "-web" },
    bad("name", "The name cannot start or end with -: use a-z or 0-9 there."),
  ],
  [
    "a trailing hyphen",
    { name: "web-" },
    bad("name", "The name cannot start or end with -: use a-z or 0-9 there."),
  ],
  [
    "Slack markup in the name",
    { name: "<!channel>" },
    bad("name", 'The name may only contain a-z, 0-9 and - (not "<", "!", ">").'),
  ],
  ["a /30 address", { ip: "10.0.0.1/30", gateway: "10.0.0.2" }, OK],
  ["an /8 address", { ip: "10.20.30.40/8", gateway: "10.0.0.1" }, OK],
  [
    "an address without prefix",
    { ip: "192.168.1.50" },
    bad("ip", "Add the prefix length after the address, e.g. 192.168.1.50/24."),
  ],
  [
    "a blank address",
    { ip: undefined },
    bad("ip", "Enter the VM's IPv4 address with its prefix length, e.g. 192.168.1.50/24."),
  ],
  [
    "an octet over 255",
    { ip: "192.168.1.256/24" },
    bad("ip", "Enter an IPv4 address with a prefix length, e.g. 192.168.1.50/24."),
  ],
  [
    "three octets",
    { ip: "192.168.1/24" },
    bad("ip", "Enter an IPv4 address with a prefix length, e.g. 192.168.1.50/24."),
  ],
  [
    "an IPv6 address",
    { ip: "fd00::5/64" },
    bad("ip", "Enter an IPv4 address with a prefix length, e.g. 192.168.1.50/24."),
  ],
  [
    "a /31",
    { ip: "192.168.1.50/31" },
    bad("ip", "The prefix length must be from /8 to /30 (it is /31)."),
  ],
  [
    "a /32",
    { ip: "192.168.1.50/32" },
    bad("ip", "The prefix length must be from /8 to /30 (it is /32)."),
  ],
  [
    "a /7",
    { ip: "192.168.1.50/7" },
    bad("ip", "The prefix length must be from /8 to /30 (it is /7)."),
  ],
  [
    "a prefix over 32",
    { ip: "192.168.1.50/33" },
    bad("ip", "Enter an IPv4 address with a prefix length, e.g. 192.168.1.50/24."),
  ],
  [
    "the network address",
    { ip: "192.168.1.0/24" },
    bad(
      "ip",
      "192.168.1.0 is the network address of 192.168.1.0/24: choose a host address inside it.",
    ),
  ],
  [
    "the broadcast address",
    { ip: "192.168.1.255/24" },
    bad(
      "ip",
      "192.168.1.255 is the broadcast address of 192.168.1.0/24: choose a host address inside it.",
    ),
  ],
  [
    "a gateway outside the VM's subnet",
    { gateway: "192.168.2.1" },
    bad("gateway", "The gateway 192.168.2.1 is outside the VM's subnet 192.168.1.0/24."),
  ],
  [
    "the VM's own address as gateway",
    { gateway: "192.168.1.50" },
    bad("gateway", "The gateway cannot be the VM's own address (192.168.1.50)."),
  ],
  [
    "the broadcast address as gateway",
    { gateway: "192.168.1.255" },
    bad(
      "gateway",
      "192.168.1.255 is the broadcast address of 192.168.1.0/24: the gateway must be a host in it.",
    ),
  ],
  [
    "a gateway that is not IPv4",
    { gateway: "gw.lan" },
    bad("gateway", "Enter the gateway as an IPv4 address, e.g. 192.168.1.1."),
  ],
  [
    "a gateway with a prefix",
    { gateway: "192.168.1.1/24" },
    bad("gateway", "Enter the gateway as an IPv4 address, e.g. 192.168.1.1."),
  ],
  ["a DNS server elsewhere", { dns: "1.1.1.1" }, OK],
  [
    "a DNS name instead of address",
    { dns: "dns.lan" },
    bad("dns", "Enter the DNS server as an IPv4 address, e.g. 192.168.1.1."),
  ],
  ["1 core", { cores: "1" }, OK],
  ["128 cores", { cores: "128" }, OK],
  ["0 cores", { cores: "0" }, bad("cores", "Cores must be a whole number from 1 to 128.")],
  ["129 cores", { cores: "129" }, bad("cores", "Cores must be a whole number from 1 to 128.")],
  ["2.5 cores", { cores: "2.5" }, bad("cores", "Cores must be a whole number from 1 to 128.")],
  ["negative cores", { cores: "-2" }, bad("cores", "Cores must be a whole number from 1 to 128.")],
  ["512 MB", { memory: "512" }, OK],
  ["1,048,576 MB", { memory: "1048576" }, OK],
  [
    "511 MB",
    { memory: "511" },
    bad("memory", "Memory must be a whole number of MiB from 512 to 1,048,576."),
  ],
  [
    "memory in exponent form",
    { memory: "1e4" },
    bad("memory", "Memory must be a whole number of MiB from 512 to 1,048,576."),
  ],
  [
    "1,048,577 MB",
    { memory: "1048577" },
    bad("memory", "Memory must be a whole number of MiB from 512 to 1,048,576."),
  ],
  ["1 GB disk", { disk: "1" }, OK],
  ["65,536 GB disk", { disk: "65536" }, OK],
  ["0 GB disk", { disk: "0" }, bad("disk", "Disk must be a whole number of GiB from 1 to 65,536.")],
  [
    "65,537 GB disk",
    { disk: "65537" },
    bad("disk", "Disk must be a whole number of GiB from 1 to 65,536."),
  ],
  ["VM ID 0 (auto)", { vmId: "0" }, OK],
  ["VM ID 100", { vmId: "100" }, OK],
  ["VM ID 999999999", { vmId: "999999999" }, OK],
  [
    "VM ID 99",
    { vmId: "99" },
    bad(
      "vmId",
      "The VM ID must be blank (or 0) for automatic, or a whole number from 100 to 999,999,999.",
    ),
  ],
  [
    "VM ID 1000000000",
    { vmId: "1000000000" },
    bad(
      "vmId",
      "The VM ID must be blank (or 0) for automatic, or a whole number from 100 to 999,999,999.",
    ),
  ],
  [
    "a VM ID with letters",
    { vmId: "vm100" },
    bad(
      "vmId",
      "The VM ID must be blank (or 0) for automatic, or a whole number from 100 to 999,999,999.",
    ),
  ],
  ["VLAN 0 (untagged)", { vlan: "0" }, OK],
  ["VLAN 1", { vlan: "1" }, OK],
  ["VLAN 4094", { vlan: "4094" }, OK],
  [
    "VLAN 4095",
    { vlan: "4095" },
    bad("vlan", "The VLAN must be blank (or 0) for untagged, or a whole number from 1 to 4094."),
  ],
  [
    "VLAN -1",
    { vlan: "-1" },
    bad("vlan", "The VLAN must be blank (or 0) for untagged, or a whole number from 1 to 4094."),
  ],
  ["the second node", { node: "pve2" }, OK],
  [
    "a node that was not offered",
    { node: "pve9" },
    bad("node", "Choose one of the offered nodes: pve, pve2."),
  ],
  ["the second template", { template: "9001" }, OK],
  [
    "a template that was not offered",
    { template: "9999" },
    bad("template", "Choose one of the offered templates: ubuntu (9000), debian (9001)."),
  ],
];

describe("validateVmForm", () => {
  it.each(table)("%s", (_label, change, expected) => {
    const result = validateVmForm({ ...valid, ...change }, options);
    if ("ok" in expected) {
      expect(result).toMatchObject({ ok: true });
    } else {
      expect(result.ok).toBe(false);
      if (result.ok) return;
      expect(result.errors[expected.field]).toBe(expected.message);
      expect(Object.keys(result.errors)).toEqual([expected.field]);
    }
  });

  it("folds an upper-case name to lower case and says so", () => {
    const result = validateVmForm({ ...valid, name: "Web-01" }, options);
    expect(result).toEqual({
      ok: true,
      spec: expect.objectContaining({ name: "web-01" }) as unknown,
      notes: ["The name was folded to lower case: web-01."],
    });
  });

  it("reports every invalid field at once", () => {
    const result = validateVmForm(
      { ...valid, name: "-x", cores: "0", ip: "10.0.0.0/24", vlan: "5000" },
      options,
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(Object.keys(result.errors).sort()).toEqual(["cores", "ip", "name", "vlan"]);
  });

  it("turns a valid form into the platform's inputs, all strings, with sizing as Terraform variables", () => {
    const result = validateVmForm({ ...valid, vmId: "150", vlan: "20", template: "9001" }, options);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(pipelineParams(result.spec, { sizing: "variables" })).toEqual({
      inputs: {
        action: "apply",
        vm_name: "web-01",
        vm_ip: "192.168.1.50/24",
        vm_gateway: "192.168.1.1",
        template_vm_id: "9001",
        proxmox_node: "pve",
        vm_id: "150",
        vlan_id: "20",
      },
      variables: {
        TF_VAR_cpu_cores: "2",
        TF_VAR_memory_mb: "2048",
        TF_VAR_disk_size_gb: "20",
        TF_VAR_dns_server: "192.168.1.1",
      },
    });
  });

  it("puts sizing among the inputs when the pipeline declares them", () => {
    const result = validateVmForm(valid, options);
    if (!result.ok) throw new Error("the sample form is invalid");
    const params = pipelineParams(result.spec, { sizing: "inputs" });
    expect(params.variables).toEqual({});
    expect(params.inputs).toMatchObject({
      cpu_cores: "2",
      memory_mb: "2048",
      disk_size_gb: "20",
      dns_server: "192.168.1.1",
    });
  });

  it("sends the VM's state name with the sizing: a TF_STATE_NAME variable, or the tf_state_name input", () => {
    const result = validateVmForm(valid, options);
    if (!result.ok) throw new Error("the sample form is invalid");
    expect(
      pipelineParams(result.spec, { sizing: "variables" }, "vm-web-01").variables,
    ).toMatchObject({
      TF_STATE_NAME: "vm-web-01",
    });
    const inputs = pipelineParams(result.spec, { sizing: "inputs" }, "vm-web-01");
    expect(inputs.inputs).toMatchObject({ tf_state_name: "vm-web-01" });
    expect(inputs.variables).toEqual({});
    // A request made before vmbot named states leaves the pipeline's own.
    const old = pipelineParams(result.spec, { sizing: "variables" }, null);
    expect(old.variables).not.toHaveProperty("TF_STATE_NAME");
    expect(old.inputs).not.toHaveProperty("tf_state_name");
  });

  it("sends as numbers exactly the inputs the pipeline declares type: number", () => {
    const result = validateVmForm({ ...valid, vmId: "150" }, options);
    if (!result.ok) throw new Error("the sample form is invalid");
    const params = pipelineParams(result.spec, {
      sizing: "inputs",
      numberInputs: ["vm_id", "cpu_cores"],
    });
    expect(params.inputs).toMatchObject({
      vm_id: 150,
      cpu_cores: 2,
      template_vm_id: "9000",
      vlan_id: "0",
      memory_mb: "2048",
    });
  });
});

/** Terraform's own output for a VM, as the simulated pipeline's jobs print it. */
import { type VmParams } from "./terraform.js";

function vmDefaults(params: VmParams): Required<VmParams> {
  return {
    name: params.name ?? "web-01",
    ip: params.ip ?? "192.168.1.50/24",
    gateway: params.gateway ?? "192.168.1.1",
    node: params.node ?? "pve",
    templateId: params.templateId ?? 9000,
    cores: params.cores ?? 2,
    memoryMb: params.memoryMb ?? 2048,
    diskGb: params.diskGb ?? 20,
    dns: params.dns ?? "192.168.1.1",
  };
}

/** `192.168.1.50/24` → `192.168.1.50`. */
export function addressOf(cidr: string): string {
  return cidr.split("/")[0] ?? cidr;
}

/** `terraform plan -no-color` creating one `proxmox_virtual_environment_vm.vm`. */
export function syntheticPlan(params: VmParams = {}): string {
  const vm = vmDefaults(params);
  return `
Terraform used the selected providers to generate the following execution
plan. Resource actions are indicated with the following symbols:
  + create

Terraform will perform the following actions:

  # proxmox_virtual_environment_vm.vm will be created
  + resource "proxmox_virtual_environment_vm" "vm" {
      + acpi                    = true
      + bios                    = "seabios"
      + id                      = (known after apply)
      + ipv4_addresses          = (known after apply)
      + keyboard_layout         = "en-us"
      + mac_addresses           = (known after apply)
      + migrate                 = false
      + name                    = "${vm.name}"
      + node_name               = "${vm.node}"
      + on_boot                 = true
      + started                 = true
      + stop_on_destroy         = false
      + timeout_clone           = 1800
      + vm_id                   = (known after apply)

      + agent {
          + enabled = true
          + timeout = "15m"
          + trim    = false
          + type    = "virtio"
        }

      + clone {
          + full    = true
          + retries = 1
          + vm_id   = ${vm.templateId}
        }

      + cpu {
          + cores   = ${vm.cores}
          + sockets = 1
          + type    = "x86-64-v2-AES"
        }

      + disk {
          + datastore_id = "local-lvm"
          + file_format  = (known after apply)
          + interface    = "scsi0"
          + size         = ${vm.diskGb}
        }

      + initialization {
          + datastore_id = "local-lvm"

          + dns {
              + servers = [
                  + "${vm.dns}",
                ]
            }

          + ip_config {
              + ipv4 {
                  + address = "${vm.ip}"
                  + gateway = "${vm.gateway}"
                }
            }

          + user_account {
              + keys     = (sensitive value)
              + username = "ubuntu"
            }
        }

      + memory {
          + dedicated = ${vm.memoryMb}
          + floating  = 0
        }

      + network_device {
          + bridge  = "vmbr0"
          + enabled = true
          + model   = "virtio"
        }
    }

Plan: 1 to add, 0 to change, 0 to destroy.

Changes to Outputs:
  + vm_ip = "${addressOf(vm.ip)}"

─────────────────────────────────────────────────────────────────────────────

Saved the plan to: tfplan

To perform exactly these actions, run the following command to apply:
    terraform apply "tfplan"
`;
}

/** `terraform apply tfplan` for the plan above. */
export function syntheticApply(params: VmParams = {}): string {
  const vm = vmDefaults(params);
  return `proxmox_virtual_environment_vm.vm: Creating...
proxmox_virtual_environment_vm.vm: Still creating... [10s elapsed]
proxmox_virtual_environment_vm.vm: Still creating... [20s elapsed]
proxmox_virtual_environment_vm.vm: Creation complete after 27s [id=105]

Apply complete! Resources: 1 added, 0 changed, 0 destroyed.

Outputs:

vm_ip = "${addressOf(vm.ip)}"
`;
}

/** `terraform apply tfplan` for `syntheticReplacePlan`: the old VM is destroyed, then re-created. */
export function syntheticReplaceApply(params: VmParams & { vmId?: number } = {}): string {
  const vm = vmDefaults(params);
  const oldId = params.vmId ?? 104;
  return `proxmox_virtual_environment_vm.vm: Destroying... [id=${oldId}]
proxmox_virtual_environment_vm.vm: Still destroying... [id=${oldId}, 10s elapsed]
proxmox_virtual_environment_vm.vm: Destruction complete after 14s
proxmox_virtual_environment_vm.vm: Creating...
proxmox_virtual_environment_vm.vm: Still creating... [10s elapsed]
proxmox_virtual_environment_vm.vm: Still creating... [20s elapsed]
proxmox_virtual_environment_vm.vm: Creation complete after 29s [id=${oldId + 2}]

Apply complete! Resources: 1 added, 0 changed, 1 destroyed.

Outputs:

vm_ip = "${addressOf(vm.ip)}"
`;
}

/** A plan that cannot be made because Proxmox refused the token, as Terraform reports it. */
export function syntheticPlanError(): string {
  return `
Planning failed. Terraform encountered an error while generating this plan.

╷
│ Error: error retrieving VM list: received an HTTP 401 response - Reason: authentication failure
│
│   with proxmox_virtual_environment_vm.vm,
│   on main.tf line 12, in resource "proxmox_virtual_environment_vm" "vm":
│   12: resource "proxmox_virtual_environment_vm" "vm" {
│
╵
`;
}

/**
 * Terraform's http backend refused the state lock with 403, as GitLab refuses it to a job token
 * whose user is below Maintainer (`backend/remote-state/http/client.go`).
 */
export function syntheticStateAuthError(): string {
  return `
╷
│ Error: Error acquiring the state lock
│
│ Error message: HTTP remote state endpoint invalid auth
│
│ Terraform acquires a state lock to protect the state from being written
│ by multiple users at the same time. Please resolve the issue above and try
│ again. For most commands, you can disable locking with the "-lock=false"
│ flag, but this is not recommended.
╵
`;
}

/**
 * `terraform plan -no-color` when the VM must be replaced: moving it to another node forces a new
 * VM (`-/+`), so the plan destroys the existing one.
 */
export function syntheticReplacePlan(
  params: VmParams & { fromNode?: string; vmId?: number } = {},
): string {
  const vm = vmDefaults(params);
  const fromNode = params.fromNode ?? (vm.node === "pve1" ? "pve2" : "pve1");
  // The existing VM has 2 cores and a 20 GB disk; Terraform's diff hides what does not change.
  const cpu =
    vm.cores === 2
      ? ""
      : `      ~ cpu {
          ~ cores   = 2 -> ${vm.cores}
            # (2 unchanged attributes hidden)
        }

`;
  const size = vm.diskGb === 20 ? "" : `          ~ size         = 20 -> ${vm.diskGb}\n`;
  return `
Terraform used the selected providers to generate the following execution
plan. Resource actions are indicated with the following symbols:
-/+ destroy and then create replacement

Terraform will perform the following actions:

  # proxmox_virtual_environment_vm.vm must be replaced
-/+ resource "proxmox_virtual_environment_vm" "vm" {
      ~ id                      = "${params.vmId ?? 104}" -> (known after apply)
      ~ ipv4_addresses          = [
          - [
              - "127.0.0.1",
            ],
          - [
              - "${addressOf(vm.ip)}",
            ],
        ] -> (known after apply)
      ~ mac_addresses           = [
          - "BC:24:11:5E:9A:21",
        ] -> (known after apply)
        name                    = "${vm.name}"
      ~ node_name               = "${fromNode}" -> "${vm.node}" # forces replacement
      ~ vm_id                   = ${params.vmId ?? 104} -> (known after apply)
        # (9 unchanged attributes hidden)

${cpu}      ~ disk {
          ~ file_format  = "raw" -> (known after apply)
${size}            # (${size === "" ? 3 : 2} unchanged attributes hidden)
        }

        # (${cpu === "" ? 6 : 5} unchanged blocks hidden)
    }

Plan: 1 to add, 0 to change, 1 to destroy.

─────────────────────────────────────────────────────────────────────────────

Saved the plan to: tfplan

To perform exactly these actions, run the following command to apply:
    terraform apply "tfplan"
`;
}

/** Terraform's answer when the http backend's state is locked by someone else. */
export function syntheticLockError(lock: {
  id: string;
  who: string;
  createdAt: Date;
  operation?: string;
}): string {
  // Terraform prints the lock's creation time with Go's default time format,
  // `2006-01-02 15:04:05.999999999 -0700 MST`: the fraction without trailing zeros, none if zero.
  const created = lock.createdAt
    .toISOString()
    .replace("T", " ")
    .replace(/\.(\d+)Z$/, (_, fraction: string) => {
      const digits = fraction.replace(/0+$/, "");
      return `${digits === "" ? "" : `.${digits}`} +0000 UTC`;
    });
  return `
╷
│ Error: Error acquiring the state lock
│
│ Error message: HTTP remote state already locked: ID=${lock.id}
│ Lock Info:
│   ID:        ${lock.id}
│   Path:
│   Operation: ${lock.operation ?? "OperationTypeApply"}
│   Who:       ${lock.who}
│   Version:   1.9.8
│   Created:   ${created}
│   Info:
│
│
│ Terraform acquires a state lock to protect the state from being written
│ by multiple users at the same time. Please resolve the issue above and try
│ again. For most commands, you can disable locking with the "-lock=false"
│ flag, but this is not recommended.
╵
`;
}

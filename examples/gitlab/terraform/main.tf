resource "proxmox_virtual_environment_vm" "vm" {
  name      = var.vm_name
  node_name = var.proxmox_node
  vm_id     = var.vm_id == 0 ? null : var.vm_id

  clone {
    vm_id = var.template_vm_id
    full  = true
  }

  agent {
    enabled = true
  }

  cpu {
    cores = var.cpu_cores
  }

  memory {
    dedicated = var.memory_mb
  }

  disk {
    datastore_id = "local-lvm"
    interface    = "scsi0"
    size         = var.disk_size_gb
  }

  network_device {
    bridge  = "vmbr0"
    vlan_id = var.vlan_id == 0 ? null : var.vlan_id
  }

  initialization {
    ip_config {
      ipv4 {
        address = var.vm_ip
        gateway = var.vm_gateway
      }
    }
    dns {
      servers = [var.dns_server]
    }
    user_account {
      username = "ubuntu"
      keys     = var.ssh_public_key == "" ? [] : [var.ssh_public_key]
    }
  }
}

# Every node's load, for the plan message vmbot posts.
data "proxmox_virtual_environment_nodes" "all" {}

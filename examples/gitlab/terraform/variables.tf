# Every variable the pipeline sets through TF_VAR_*: the inputs, and the sizing vmbot's form asks.

variable "vm_name" {
  description = "Hostname and Proxmox display name"
  type        = string
}

variable "vm_ip" {
  description = "Static IPv4 address with prefix, e.g. 192.168.1.50/24"
  type        = string
}

variable "vm_gateway" {
  description = "Default gateway, inside vm_ip's subnet"
  type        = string
  default     = "192.168.1.1"
}

variable "template_vm_id" {
  description = "Cloud-init template VM to full-clone"
  type        = number
  default     = 9000
}

variable "proxmox_node" {
  description = "Proxmox node the VM runs on"
  type        = string
  default     = "pve"
}

variable "vm_id" {
  description = "Proxmox VM ID; 0 lets Proxmox choose"
  type        = number
  default     = 0
}

variable "vlan_id" {
  description = "VLAN tag; 0 is untagged"
  type        = number
  default     = 0
}

variable "cpu_cores" {
  description = "Virtual CPU cores"
  type        = number
  default     = 2
}

variable "memory_mb" {
  description = "Memory in MiB"
  type        = number
  default     = 2048
}

variable "disk_size_gb" {
  description = "Boot disk size in GiB"
  type        = number
  default     = 20
}

variable "dns_server" {
  description = "DNS server for the VM"
  type        = string
  default     = "192.168.1.1"
}

variable "ssh_public_key" {
  description = "Public key cloud-init installs for the ubuntu user (a CI/CD variable)"
  type        = string
  default     = ""
}

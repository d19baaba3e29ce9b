terraform {
  required_version = ">= 1.5"
  required_providers {
    proxmox = {
      source  = "bpg/proxmox"
      version = "~> 0.66"
    }
  }
  # GitLab-managed state: the pipeline passes the address and the job token at `terraform init`.
  backend "http" {}
}

# PROXMOX_VE_ENDPOINT and PROXMOX_VE_API_TOKEN come from the project's CI/CD variables (masked
# and protected). This token provisions VMs; vmbot's own Proxmox token only reads.
provider "proxmox" {}

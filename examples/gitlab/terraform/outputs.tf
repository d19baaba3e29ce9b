output "vm_ip" {
  description = "The VM's address with its prefix; tf:apply writes it to vm_ip.txt"
  value       = var.vm_ip
}

# Each online node's load, read by vmbot from the plan's JSON (GITLAB_PLAN_JSON_ARTIFACT).
output "node_resources" {
  description = "cpu_usage_percent, memory_used_gb and memory_total_gb of each online node"
  value = {
    for i, name in data.proxmox_virtual_environment_nodes.all.names :
    name => {
      cpu_usage_percent = round(data.proxmox_virtual_environment_nodes.all.cpu_utilization[i] * 100)
      memory_used_gb    = round(data.proxmox_virtual_environment_nodes.all.memory_used[i] / 1073741824)
      memory_total_gb = round(
        (data.proxmox_virtual_environment_nodes.all.memory_used[i] +
        data.proxmox_virtual_environment_nodes.all.memory_available[i]) / 1073741824
      )
    }
    if data.proxmox_virtual_environment_nodes.all.online[i]
  }
}

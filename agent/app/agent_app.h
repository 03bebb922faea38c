// Wires the core and the exporters into the running agent. Kept apart from main.cc so that
// tests link it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "config/config.h"
#include "probes/attach_policy.h"
#include "probes/features.h"

namespace stagewatch {

struct AgentOptions {
  Config config;
  std::string btf_path;  // --bpf.btf-path; empty for /sys/kernel/btf/vmlinux
  AttachPolicy attach = AttachPolicy::kAuto;  // --bpf.attach
  std::string web_config_file;   // --web.config.file: TLS and basic auth; empty: plain HTTP
  std::vector<int> keep_capabilities;  // --capabilities.keep; all others dropped after attach
  bool bpf_stats = false;  // --bpf.stats: hold BPF run-time counting on while running
  // Loads the configuration again as at start, on SIGHUP (app/config_reload.h); null: no
  // reload.
  std::function<absl::StatusOr<Config>()> reload_config;
};

// What the agent cannot run without: privileges to load BPF, and BTF for CO-RE. The message
// says what to do.
absl::Status CheckCanLoadBpf(const KernelFeatures& features, const std::string& btf_path);

// Runs until SIGTERM or SIGINT, reloading on SIGHUP; returns the process exit code.
int RunAgent(const AgentOptions& options);

}  // namespace stagewatch

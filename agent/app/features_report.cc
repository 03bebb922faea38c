#include "app/features_report.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "app/agent_app.h"
#include "cgroup/layout.h"
#include "log.h"
#include "probes/features.h"
#include "probes/libbpf_log.h"
#include "probes/program_stats.h"
#include "signals/memory/fault_counting.h"
#include "signals/signal.h"

namespace stagewatch {
namespace {

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Each signal's probes started for real (then stopped), or the reason they cannot be; and
// whether the probe that names cgroups by events attached (else the agent walks).
std::vector<ProbeStatus> TryProbes(const ProbeTrial& trial, const std::string& btf_path,
                                   bool* named_by_events) {
  const absl::Status can_load = CheckCanLoadBpf(trial.features, btf_path);
  std::vector<ProbeStatus> all;
  *named_by_events = false;
  for (const Signal& signal : Signals()) {
    if (!signal.try_probes) continue;
    std::vector<ProbeStatus> some = can_load.ok()
                                        ? signal.try_probes(trial)
                                        : signal.not_started(std::string(can_load.message()));
    if (signal.names_cgroups && !some.empty() && some.front().attached) *named_by_events = true;
    all.insert(all.end(), some.begin(), some.end());
  }
  return all;
}

}  // namespace

int RunFeaturesReport(const FeaturesReportOptions& options, std::ostream& out) {
  const bool json = options.json;
  const std::string& btf_path = options.btf_path;
  RouteLibbpfLogs();
  const KernelFeatures f = ProbeKernelFeatures(btf_path);
  absl::StatusOr<CgroupLayout> layout = DetectHostCgroupLayout();
  bool events = false;
  const FaultCounting faults =
      ChooseFaultCounting(options.fault_source, layout.ok() ? *layout : CgroupLayout{});
  const std::string fault_source = faults.memcg ? "memcg" : "bpf";
  const std::vector<ProbeStatus> probes =
      TryProbes({.features = ApplyAttachPolicy(f, options.attach),
                 .key = layout.ok() ? layout->key : CGROUP_KEY_DEFAULT,
                 .lifecycle_events = options.lifecycle_events,
                 .task_iterator = options.task_iterator,
                 .minor_faults = faults.bpf_minor},
                btf_path, &events);
  const std::string naming = events ? "lifecycle_events" : "walks";

  const std::vector<std::pair<const char*, bool>> flags = {
      {"privileged", f.privileged},       {"btf", f.btf},
      {"ringbuf", f.ringbuf},             {"raw_tracepoint", f.raw_tracepoint},
      {"tracing", f.tracing},             {"kprobe_events", f.kprobe_events},
      {"tracefs", f.tracefs},             {"bpf_stats_enabled", f.bpf_stats_enabled},
      // Whether --bpf.stats can count BPF run time here without the sysctl.
      {"bpf_enable_stats", BpfStatsHold::Acquire().ok()}};
  const std::string mode = layout.ok() ? std::string(CgroupModeName(layout->mode)) : "none";
  const std::string key_root = layout.ok() ? layout->key_root : layout.status().ToString();

  if (json) {
    out << "{\"kernel\":" << JsonString(f.kernel_release)
        << ",\"btf_path\":" << JsonString(f.btf_path) << ",\"features\":{";
    for (size_t i = 0; i < flags.size(); i++) {
      out << (i ? "," : "") << JsonString(flags[i].first) << ":"
          << (flags[i].second ? "true" : "false");
    }
    out << "},\"cgroup\":{\"mode\":" << JsonString(mode) << ",\"keyed_on\":" << JsonString(key_root)
        << ",\"naming\":" << JsonString(naming) << "},\"page_faults\":{\"source\":"
        << JsonString(fault_source) << ",\"why\":" << JsonString(faults.why)
        << "},\"probes\":[";
    for (size_t i = 0; i < probes.size(); i++) {
      const ProbeStatus& p = probes[i];
      out << (i ? "," : "") << "{\"name\":" << JsonString(p.name)
          << ",\"attach_type\":" << JsonString(p.attach_type)
          << ",\"attached\":" << (p.attached ? "true" : "false")
          << ",\"error\":" << JsonString(p.error) << "}";
    }
    out << "]}\n";
  } else {
    out << "kernel      " << f.kernel_release << "\n";
    out << "btf         " << (f.btf ? f.btf_path : "missing") << "\n";
    for (const auto& [name, on] : flags) {
      out << absl::StrFormat("%-19s %s\n", name, on ? "yes" : "no");
    }
    out << "cgroup mode " << mode << " (keyed on " << key_root << ")\n";
    out << "cgroup naming " << naming
        << (events ? " (cgroup_mkdir/cgroup_rmdir tracepoints)" : " (walks of the hierarchy)")
        << "\n";
    out << "page faults " << fault_source << " (" << faults.why << ")\n\nprobes:\n";
    for (const ProbeStatus& p : probes) {
      out << absl::StrFormat("  %-20s %-15s %s\n", p.name,
                             p.attach_type.empty() ? "-" : p.attach_type,
                             p.attached ? "attached" : absl::StrCat("NOT attached: ", p.error));
    }
  }
  bool all_attached = true;
  for (const ProbeStatus& p : probes) all_attached &= p.attached;
  return all_attached ? 0 : 1;
}

}  // namespace stagewatch

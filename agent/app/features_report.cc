#include "app/features_report.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "app/agent_app.h"
#include "cgroup/layout.h"
#include "log.h"
#include "probes/features.h"
#include "probes/cgroup_probe.h"
#include "probes/libbpf_log.h"
#include "probes/memory_probe.h"
#include "probes/oom_probe.h"
#include "probes/program_stats.h"
#include "probes/sched_probe.h"

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

// Each probe module started for real (then stopped), or the reason it cannot be.
std::vector<ProbeStatus> TryProbes(const KernelFeatures& f, const std::string& btf_path,
                                   cgroup_key_hierarchy key, bool lifecycle_events) {
  std::vector<ProbeStatus> all;
  auto append = [&all](std::vector<ProbeStatus> some) {
    all.insert(all.end(), some.begin(), some.end());
  };
  if (absl::Status s = CheckCanLoadBpf(f, btf_path); !s.ok()) {
    const std::string why(s.message());
    append(OomProbe::NotStarted(why));
    append(SchedProbe::NotStarted(why));
    append(MemoryProbe::NotStarted(why));
    append(CgroupProbe::NotStarted(why));
    return all;
  }
  auto oom = OomProbe::Start({.key = key, .features = f}, [](const oom_event&) {});
  append(oom.ok() ? (*oom)->statuses() : OomProbe::NotStarted(std::string(oom.status().message())));
  auto sched = SchedProbe::Start({.key = key, .features = f});
  append(sched.ok() ? (*sched)->statuses()
                    : SchedProbe::NotStarted(std::string(sched.status().message())));
  auto memory = MemoryProbe::Start({.key = key, .features = f});
  append(memory.ok() ? (*memory)->statuses()
                     : MemoryProbe::NotStarted(std::string(memory.status().message())));
  auto cgroup = CgroupProbe::Start({.enabled = lifecycle_events, .key = key, .features = f},
                                   [](const cgroup_event&) {}, nullptr);
  append(cgroup.ok() ? (*cgroup)->statuses()
                     : CgroupProbe::NotStarted(std::string(cgroup.status().message())));
  return all;
}

}  // namespace

int RunFeaturesReport(const FeaturesReportOptions& options, std::ostream& out) {
  const bool json = options.json;
  const std::string& btf_path = options.btf_path;
  RouteLibbpfLogs();
  const KernelFeatures f = ProbeKernelFeatures(btf_path);
  absl::StatusOr<CgroupLayout> layout = DetectHostCgroupLayout();
  const std::vector<ProbeStatus> probes =
      TryProbes(ApplyAttachPolicy(f, options.attach), btf_path,
                layout.ok() ? layout->key : CGROUP_KEY_DEFAULT, options.lifecycle_events);
  // The agent learns cgroups from the cgroup probe's events where it attaches, else by walks.
  bool events = false;
  for (const ProbeStatus& p : probes) events |= p.name == "cgroup" && p.attached;
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
        << ",\"naming\":" << JsonString(naming) << "},\"probes\":[";
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
        << "\n\nprobes:\n";
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

#include "runs/run_cgroup.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cgroup/cgroup_control.h"
#include "cgroup/cgroup_subtree.h"
#include "cgroup/limit_files.h"
#include "cgroup/memory_stats.h"
#include "cgroup/proc_cgroup.h"
#include "runs/cpuset_request.h"
#include "string_util.h"
#include "units.h"

namespace stagewatch {
namespace {

constexpr int kCfsPeriodUs = 100000;
constexpr int kMinCfsQuotaUs = 1000;  // kernel/sched/core.c: min_cfs_quota_period

bool Lists(const std::vector<std::string>& controllers, std::string_view controller) {
  return std::find(controllers.begin(), controllers.end(), controller) != controllers.end();
}

bool WantsCpuset(const RunLimits& l) { return l.cpuset_cpus || l.cpuset_mems; }

// With `cpuset`, the v1 cpuset hierarchy too: only a run that asks for a cpuset joins it (or
// one mounted with cpu), so the others never meet a v1 cpuset cgroup's empty start
// (RunCgroupPlan::cpuset_inherit).
std::vector<RunHierarchy> Hierarchies(const CgroupLayout& layout, bool cpuset) {
  std::vector<RunHierarchy> out;
  if (layout.key == CGROUP_KEY_DEFAULT) {
    out.push_back({"unified", layout.v2_root, true, "", ""});
    return out;
  }
  out.push_back({"memory", layout.v1_memory_root, false, "", ""});
  std::vector<const char*> controllers = {"cpu", "cpuacct"};
  if (cpuset) controllers.push_back("cpuset");
  for (const char* controller : controllers) {
    auto it = layout.v1_roots.find(controller);
    if (it == layout.v1_roots.end()) continue;
    bool seen = false;  // cpu and cpuacct are often mounted together
    for (const RunHierarchy& h : out) seen = seen || h.root == it->second;
    if (!seen) out.push_back({controller, it->second, false, "", ""});
  }
  if (!layout.v2_root.empty()) out.push_back({"unified", layout.v2_root, true, "", ""});
  return out;
}

// The v1 hierarchy holding `controller`, wherever it is mounted (alone, or with others).
const RunHierarchy* FindV1(const std::vector<RunHierarchy>& hs, const CgroupLayout& layout,
                           const std::string& controller) {
  auto it = layout.v1_roots.find(controller);
  if (it == layout.v1_roots.end()) return nullptr;
  for (const RunHierarchy& h : hs) {
    if (!h.v2 && h.root == it->second) return &h;
  }
  return nullptr;
}

const RunHierarchy* Find(const std::vector<RunHierarchy>& hs, std::string_view name) {
  for (const RunHierarchy& h : hs) {
    if (h.name == name) return &h;
  }
  return nullptr;
}

std::string MemoryFlag(const char* flag, uint64_t bytes) {
  return absl::StrFormat("%s %s", flag, FormatBytes(bytes));
}

// v2: the controllers a run wants, enabled from the parent down to the run's parent. Those a
// limit needs must be there; the others only cost figures when missing.
absl::Status PlanControllers(const RunCgroupSpec& spec, const RunHierarchy& h,
                             RunCgroupPlan& plan) {
  const bool memory_needed = spec.limits.memory_max_bytes || spec.limits.memory_high_bytes;
  const bool cpu_needed = spec.limits.cpu_max_cores || spec.limits.cpu_weight;
  const bool cpuset_needed = WantsCpuset(spec.limits);
  const std::string parent_dir = h.root + h.parent;
  const std::vector<std::string> available = AvailableControllers(parent_dir);
  const std::vector<std::string> enabled = EnabledControllers(parent_dir);
  std::vector<std::string> dirs = {parent_dir, parent_dir + "/" + spec.directory,
                                   parent_dir + "/" + spec.directory + "/" + spec.stage};
  // cpuset only for a run that asks: its CPUs and nodes are the parent's otherwise anyway.
  for (const auto& [controller, needed, optional] :
       {std::tuple{"memory", memory_needed, true}, std::tuple{"cpu", cpu_needed, true},
        std::tuple{"cpuset", cpuset_needed, false}}) {
    if (!needed && !optional) continue;
    if (!Lists(available, controller)) {
      if (!needed) continue;
      return absl::FailedPreconditionError(absl::StrFormat(
          "the cgroup2 %s controller is not available in %s (its cgroup.controllers lacks it), "
          "so the run's limits cannot be set; have it delegated there, or pass --cgroup.parent "
          "a cgroup that has it", controller, parent_dir));
    }
    for (size_t i = 0; i < dirs.size(); ++i) {
      if (i == 0 && Lists(enabled, controller)) continue;
      plan.enable.push_back({SubtreeControlFile(dirs[i]), absl::StrCat("+", controller), ""});
    }
  }
  return absl::OkStatus();
}

// The cpuset asked for, in the keyed cgroup2 directory or the v1 cpuset hierarchy; and on v1
// each directory made there takes its parent's CPUs and nodes first (the ones not asked for
// stay the parent's on v1 too).
void PlanCpuset(const RunCgroupSpec& spec, const RunHierarchy& h, RunCgroupPlan& plan) {
  const RunLimits& l = spec.limits;
  const LimitFiles& files = LimitFilesOf(h.v2);
  const std::string dir = h.dir() + "/";
  if (!h.v2) {
    const std::string directory = absl::StrCat(h.root, h.parent, "/", spec.directory);
    plan.cpuset_inherit = {directory, absl::StrCat(directory, "/", spec.stage), h.dir()};
  }
  for (const auto& [wanted, flag, file, effective] :
       {std::tuple{l.cpuset_cpus, "--cpuset-cpus", files.cpuset_cpus,
                   files.cpuset_cpus_effective},
        std::tuple{l.cpuset_mems, "--cpuset-mems", files.cpuset_mems,
                   files.cpuset_mems_effective}}) {
    if (!wanted) continue;
    const std::string flag_text = absl::StrCat(flag, " ", *wanted);
    plan.limits.push_back({dir + file, *wanted, flag_text});
    plan.cpuset_checks.push_back({dir + effective, *wanted, flag_text});
  }
}

void PlanLimits(const RunCgroupSpec& spec, const CgroupLayout& layout,
                const std::vector<RunHierarchy>& hs, RunCgroupPlan& plan) {
  const RunLimits& l = spec.limits;
  const RunHierarchy& key = hs.front();
  const bool v2 = key.v2;
  const RunHierarchy* cpu = v2 ? &key : Find(hs, "cpu");
  const LimitFiles& files = LimitFilesOf(v2);
  const std::string mem_dir = key.dir() + "/";
  // On v1 whenever the run joins the cpuset hierarchy: asked for, or mounted with cpu.
  const RunHierarchy* cpuset = v2 ? &key : FindV1(hs, layout, "cpuset");
  if (cpuset != nullptr && (WantsCpuset(l) || !v2)) PlanCpuset(spec, *cpuset, plan);
  if (l.memory_max_bytes) {
    plan.limits.push_back({mem_dir + files.memory_max,
                           std::to_string(*l.memory_max_bytes),
                           MemoryFlag("--memory-max", *l.memory_max_bytes)});
  }
  if (l.memory_high_bytes) {
    // v1 has no memory.high; the soft limit is its nearest: the kernel reclaims the cgroup
    // back towards it first when the host runs short of memory.
    plan.limits.push_back({mem_dir + files.memory_high,
                           std::to_string(*l.memory_high_bytes),
                           MemoryFlag("--memory-high", *l.memory_high_bytes)});
  }
  if (cpu == nullptr) return;
  const std::string cpu_dir = cpu->dir() + "/";
  if (l.cpu_max_cores) {
    const long long quota = std::llround(*l.cpu_max_cores * kCfsPeriodUs);
    const std::string flag = absl::StrFormat("--cpu-max %g", *l.cpu_max_cores);
    if (v2) {
      plan.limits.push_back(
          {cpu_dir + files.cpu_max, absl::StrFormat("%d %d", quota, kCfsPeriodUs), flag});
    } else {
      plan.limits.push_back({cpu_dir + files.cpu_period, std::to_string(kCfsPeriodUs), flag});
      plan.limits.push_back({cpu_dir + files.cpu_max, std::to_string(quota), flag});
    }
  }
  if (l.cpu_weight) {
    const std::string flag = absl::StrFormat("--cpu-weight %d", *l.cpu_weight);
    if (v2) {
      plan.limits.push_back({cpu_dir + files.cpu_weight, std::to_string(*l.cpu_weight), flag});
    } else {
      // The weight 100 of cgroup2 is v1's 1024 shares, as systemd converts them.
      const uint64_t shares = std::max<uint64_t>(2, uint64_t{*l.cpu_weight} * 1024 / 100);
      plan.limits.push_back({cpu_dir + files.cpu_weight, std::to_string(shares), flag});
    }
  }
}

// "; this host's online CPUs are 0-1" for a cpuset file, with what the cgroup above offers
// when it offers less (a cpuset must lie within its parent's); "" for other files.
std::string CpusetHint(const std::string& file) {
  const bool cpus = file.ends_with(kV1LimitFiles.cpuset_cpus) ||
                    file.ends_with(kV1LimitFiles.cpuset_cpus_effective) ||
                    file.ends_with(kV2LimitFiles.cpuset_cpus_effective);
  const bool mems = file.ends_with(kV1LimitFiles.cpuset_mems) ||
                    file.ends_with(kV1LimitFiles.cpuset_mems_effective) ||
                    file.ends_with(kV2LimitFiles.cpuset_mems_effective);
  if (!cpus && !mems) return "";
  const CpusetKind kind = cpus ? CpusetKind::kCpus : CpusetKind::kMems;
  std::string hint = absl::StrCat("; ", HostHasText(kind));
  std::string within = "those";
  // The parent's effective list: the same file name beneath either version's naming.
  const std::string dir = file.substr(0, file.rfind('/'));
  const std::string parent = dir.substr(0, dir.rfind('/'));
  for (const char* effective :
       cpus ? std::vector<const char*>{kV2LimitFiles.cpuset_cpus_effective,
                                       kV1LimitFiles.cpuset_cpus_effective}
            : std::vector<const char*>{kV2LimitFiles.cpuset_mems_effective,
                                       kV1LimitFiles.cpuset_mems_effective}) {
    absl::StatusOr<std::string> offered =
        ReadCpusetListFile(absl::StrCat(parent, "/", effective));
    if (!offered.ok()) continue;
    if (*offered != HostOnlineList(kind)) {
      const std::string what = offered->empty() ? "none" : "only " + *offered;
      absl::StrAppend(&hint, absl::StrFormat(", and the cgroup above the run's (%s) offers %s",
                                             parent, what));
      within = "what it offers";
    }
    break;
  }
  return absl::StrCat(hint, ": ask for ", cpus ? "CPUs" : "nodes", " among ", within);
}

std::string Refusal(const CgroupWrite& w, const absl::Status& error) {
  std::string hint = CpusetHint(w.file);
  if (w.file.ends_with(kV1LimitFiles.cpu_max) || w.file.ends_with(kV2LimitFiles.cpu_max)) {
    hint = absl::StrFormat(" (the kernel needs at least %d µs of CPU per %d µs period: "
                           "--cpu-max %.2f or more)", kMinCfsQuotaUs, kCfsPeriodUs,
                           double(kMinCfsQuotaUs) / kCfsPeriodUs);
  }
  return absl::StrFormat("the kernel refused %s: %s%s", w.flag, error.message(), hint);
}

// Whether the kernel gave the run what it asked for: cgroup2 takes any CPUs in cpuset.cpus and
// silently keeps only those its parent has (all of the parent's when none are left).
absl::Status CheckEffective(const CpusetCheck& c) {
  absl::StatusOr<std::string> held = ReadCpusetListFile(c.file);
  if (!held.ok()) return held.status();
  const std::string& list = *held;
  absl::StatusOr<std::string> canonical = CanonicalCpuList(list, c.flag);
  if (canonical.ok() && *canonical == c.wanted) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "the kernel did not give the run %s: its %s holds \"%s\"%s", c.flag, c.file, list,
      CpusetHint(c.file)));
}

}  // namespace

absl::StatusOr<RunCgroupPlan> PlanRunCgroup(const CgroupLayout& layout,
                                            std::string_view proc_self_cgroup,
                                            const RunCgroupSpec& spec) {
  RunCgroupPlan plan;
  plan.hierarchies = Hierarchies(layout, WantsCpuset(spec.limits));
  if (plan.hierarchies.front().root.empty()) {
    return absl::FailedPreconditionError("no cgroup hierarchy to make the run's cgroup in");
  }
  if (spec.limits.cpu_max_cores || spec.limits.cpu_weight) {
    if (!plan.hierarchies.front().v2 && Find(plan.hierarchies, "cpu") == nullptr) {
      return absl::FailedPreconditionError(
          "--cpu-max and --cpu-weight need the v1 cpu controller, which this host does not mount");
    }
  }
  if (WantsCpuset(spec.limits) && !plan.hierarchies.front().v2 &&
      FindV1(plan.hierarchies, layout, "cpuset") == nullptr) {
    return absl::FailedPreconditionError(
        "--cpuset-cpus and --cpuset-mems need the cpuset controller, which this host mounts "
        "neither as a v1 hierarchy nor in the cgroup2 hierarchy the runs are keyed on; mount "
        "the v1 cpuset hierarchy, or leave the cpuset out");
  }
  std::string given = spec.parent;
  const std::string key_prefix = plan.hierarchies.front().root + "/";
  if (given.starts_with(key_prefix)) given = given.substr(key_prefix.size() - 1);
  if (!given.empty() && given[0] != '/') {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--cgroup.parent \"%s\" is not absolute; give a cgroup path such as /research.slice "
        "or a directory under %s", spec.parent, plan.hierarchies.front().root));
  }
  for (RunHierarchy& h : plan.hierarchies) {
    if (spec.parent.empty()) {
      absl::StatusOr<std::string> own = ParseProcCgroupOf(proc_self_cgroup, h.v2 ? "" : h.name);
      if (!own.ok()) return own.status();
      h.parent = *own;
    } else {
      h.parent = given;
    }
    if (h.parent == "/") h.parent = "";
    while (!h.parent.empty() && h.parent.back() == '/') h.parent.pop_back();
    h.path = absl::StrCat(h.parent, "/", spec.directory, "/", spec.stage, "/", spec.run_id);
    const std::string parent_dir = h.root + h.parent;
    if (!IsCgroupDirectory(parent_dir)) {
      return absl::NotFoundError(absl::StrFormat(
          "the parent cgroup %s does not exist in the %s hierarchy; create it, or pass "
          "--cgroup.parent a cgroup that exists in every hierarchy", parent_dir, h.name));
    }
    if (IsCgroupDirectory(h.dir())) {
      return absl::AlreadyExistsError(absl::StrFormat(
          "a cgroup for run id \"%s\" exists already (%s); pick another --run-id, or leave it "
          "out to get a new one", spec.run_id, h.dir()));
    }
  }
  if (plan.hierarchies.front().v2) {
    if (absl::Status s = PlanControllers(spec, plan.hierarchies.front(), plan); !s.ok()) return s;
  }
  PlanLimits(spec, layout, plan.hierarchies, plan);
  return plan;
}

absl::StatusOr<std::unique_ptr<RunCgroup>> RunCgroup::Create(const CgroupLayout& layout,
                                                             const RunCgroupSpec& spec) {
  absl::StatusOr<std::unique_ptr<RunCgroup>> cgroup = Prepare(layout, spec);
  if (!cgroup.ok()) return cgroup.status();
  if (absl::Status s = (*cgroup)->Make(); !s.ok()) return s;
  return cgroup;
}

absl::StatusOr<std::unique_ptr<RunCgroup>> RunCgroup::Prepare(const CgroupLayout& layout,
                                                              const RunCgroupSpec& spec) {
  // Unreadable, it has no line for any hierarchy: PlanRunCgroup says which it lacks.
  const std::string self = ReadOwnProcCgroupText().value_or("");
  absl::StatusOr<RunCgroupPlan> plan = PlanRunCgroup(layout, self, spec);
  if (!plan.ok()) return plan.status();
  std::unique_ptr<RunCgroup> cgroup(new RunCgroup());
  cgroup->plan_ = *std::move(plan);
  cgroup->owned_.assign(cgroup->plan_.hierarchies.size(), false);
  cgroup->SetReaderLayout(layout);
  return cgroup;
}

absl::StatusOr<std::unique_ptr<RunCgroup>> RunCgroup::Adopt(const CgroupLayout& layout,
                                                            const std::string& key_path) {
  const std::vector<std::string_view> parts = SplitNonEmpty(key_path, '/');
  if (parts.size() < 3) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is not a launcher run's cgroup (<parent>/<directory>/<stage>/<run-id>)", key_path));
  }
  std::vector<std::string> ancestors = {""};  // the key parent's, from the root down
  for (size_t i = 0; i + 3 < parts.size(); ++i) {
    ancestors.push_back(absl::StrCat(ancestors.back(), "/", ToAbsl(parts[i])));
  }
  const std::string relative = absl::StrCat("/", ToAbsl(parts[parts.size() - 3]), "/",
                                            ToAbsl(parts[parts.size() - 2]), "/",
                                            ToAbsl(parts.back()));
  std::unique_ptr<RunCgroup> cgroup(new RunCgroup());
  cgroup->reap_ = false;  // the dead launcher's leftovers have another reaper
  cgroup->remove_when_destroyed_ = false;
  for (RunHierarchy& h : Hierarchies(layout, /*cpuset=*/true)) {
    const bool key = cgroup->plan_.hierarchies.empty();
    for (auto it = ancestors.rbegin(); it != ancestors.rend(); ++it) {
      if (IsCgroupDirectory(h.root + *it + relative)) {
        h.parent = *it;
        h.path = *it + relative;
        break;
      }
      if (key) break;  // the keyed hierarchy's is `key_path` itself
    }
    if (h.path.empty()) {
      if (key) return absl::NotFoundError(absl::StrFormat("no cgroup %s", h.root + key_path));
      continue;  // not made in this hierarchy, or removed already
    }
    cgroup->plan_.hierarchies.push_back(h);
  }
  if (cgroup->plan_.hierarchies.empty()) {
    return absl::FailedPreconditionError("no cgroup hierarchy to find the run's cgroup in");
  }
  cgroup->owned_.assign(cgroup->plan_.hierarchies.size(), true);
  cgroup->SetReaderLayout(layout);
  return cgroup;
}

void RunCgroup::SetReaderLayout(const CgroupLayout& layout) {
  reader_layout_ = layout;
  CgroupLayout& r = reader_layout_;
  r.v1_roots.clear();
  r.v2_root.clear();
  for (const RunHierarchy& h : plan_.hierarchies) {
    procs_files_.push_back(CgroupProcsFile(h.dir()));
    if (h.v2) {
      r.v2_root = h.dir();
    } else {
      for (const auto& [controller, root] : layout.v1_roots) {
        if (root == h.root) r.v1_roots[controller] = h.dir();
      }
    }
  }
  if (r.key == CGROUP_KEY_DEFAULT) {
    r.key_root = r.v2_root;
  } else {
    r.key_root = r.v1_memory_root = plan_.hierarchies.front().dir();
  }
}

absl::Status RunCgroup::Make() {
  absl::Status s = MakeAndWrite();
  if (!s.ok()) Remove().IgnoreError();
  return s;
}

absl::Status RunCgroup::MakeAndWrite() {
  // Another run's end removes the shared <directory> and <stage> cgroups once they are empty,
  // maybe between two of these mkdirs: a parent that vanished is made again.
  constexpr int kAttempts = 100;
  for (size_t n = 0; n < plan_.hierarchies.size(); ++n) {
    const RunHierarchy& h = plan_.hierarchies[n];
    const std::vector<std::string_view> parts =
        SplitNonEmpty(std::string_view(h.path).substr(h.parent.size()), '/');
    for (int attempt = 1;; ++attempt) {
      std::string dir = h.root + h.parent;
      bool vanished = false;
      for (size_t i = 0; i < parts.size() && !vanished; ++i) {
        dir += "/" + std::string(parts[i]);
        const bool last = i + 1 == parts.size();
        const int error = MakeCgroup(dir);
        if (error == 0) {
          if (last) owned_[n] = true;
          continue;
        }
        if (error == EEXIST && !last) continue;
        if (error == ENOENT && i > 0 && attempt < kAttempts) {
          vanished = true;
          continue;
        }
        if (error == EEXIST) {
          return absl::AlreadyExistsError(absl::StrFormat(
              "a cgroup for this run id exists already (%s); pick another --run-id", dir));
        }
        const bool denied = error == EACCES || error == EPERM;
        return absl::FailedPreconditionError(absl::StrFormat(
            "cannot create the cgroup %s: %s%s", dir, std::strerror(error),
            denied ? "; run as root, or pass --cgroup.parent a cgroup delegated to you" : ""));
      }
      if (!vanished) break;
    }
  }
  for (const std::string& dir : plan_.cpuset_inherit) {
    if (absl::Status s = InheritV1Cpuset(dir); !s.ok()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "cannot give the cpuset cgroup %s its parent's CPUs and nodes: %s", dir, s.message()));
    }
  }
  for (const CgroupWrite& w : plan_.enable) {
    int error = 0;
    if (absl::Status s = WriteCgroupFile(w.file, w.value, &error); !s.ok()) {
      const std::string dir = w.file.substr(0, w.file.rfind('/'));
      return absl::FailedPreconditionError(absl::StrFormat(
          "the kernel refused to enable the %s controller for the children of %s (%s)%s",
          w.value.substr(1), dir, s.message(),
          error == EBUSY ? "; cgroup2 lets no cgroup with processes of its own have controllers "
                           "for its children: pass --cgroup.parent a cgroup without processes"
                         : ""));
    }
  }
  for (const CgroupWrite& w : plan_.limits) {
    if (absl::Status s = WriteCgroupFile(w.file, w.value); !s.ok()) {
      return absl::InvalidArgumentError(Refusal(w, s));
    }
    if (w.file.ends_with(kV1LimitFiles.memory_max) ||
        w.file.ends_with(kV2LimitFiles.memory_max)) {
      // The kernel keeps whole pages and rounds down: a limit below one page becomes 0.
      const RunHierarchy& key = plan_.hierarchies.front();
      absl::StatusOr<std::optional<uint64_t>> held = ReadMemoryMaxIn(key.dir(), key.v2);
      if (held.ok() && held->has_value() && **held == 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "the kernel refused %s: it keeps whole pages and rounded it down to 0 bytes (%s); "
            "ask for at least %d bytes", w.flag, w.file, getpagesize()));
      }
    }
  }
  for (const CpusetCheck& c : plan_.cpuset_checks) {
    if (absl::Status s = CheckEffective(c); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::vector<pid_t> RunCgroup::Signal(int sig) const {
  // Every process of the run joined every hierarchy: the keyed one lists them all.
  absl::StatusOr<std::vector<pid_t>> pids = ProcessesInSubtree(plan_.hierarchies.front().dir());
  if (!pids.ok()) return {};
  for (pid_t pid : *pids) kill(pid, sig);
  return *pids;
}

bool RunCgroup::HoldsNoTask() const {
  for (const RunHierarchy& h : plan_.hierarchies) {
    absl::StatusOr<std::vector<pid_t>> pids = ProcessesInSubtree(h.dir());
    if (absl::IsNotFound(pids.status())) continue;  // removed in this hierarchy already
    if (!pids.ok() || !pids->empty()) return false;
  }
  return true;
}

absl::Status RunCgroup::Remove() {
  if (removed_) return absl::OkStatus();
  removed_ = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string last_error;
  // The keyed hierarchy last: the agent hears of its rmdir once the mirrors are gone too.
  for (size_t n = plan_.hierarchies.size(); n-- > 0;) {
    const RunHierarchy& h = plan_.hierarchies[n];
    if (owned_[n]) {
      if (absl::Status s = RemoveCgroupSubtree(h.dir(), reap_, deadline); !s.ok()) {
        last_error = std::string(s.message());
      }
    }
    // The shared <stage> and <directory> cgroups go with the last run in them; rmdir refuses
    // (EBUSY) while another run is in them, and one that is being made retries (Make()).
    const std::string stage_dir = h.dir().substr(0, h.dir().rfind('/'));
    if (RemoveEmptyCgroup(stage_dir)) RemoveEmptyCgroup(stage_dir.substr(0, stage_dir.rfind('/')));
  }
  if (!last_error.empty()) return absl::UnavailableError(last_error);
  return absl::OkStatus();
}

RunCgroup::~RunCgroup() {
  if (remove_when_destroyed_) Remove().IgnoreError();
}

}  // namespace stagewatch

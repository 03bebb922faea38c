// The cgroup a launched run lives in: `<parent>/<directory>/<stage>/<run-id>` in each
// hierarchy that matters (v1 memory, cpu, cpuacct, cpuset when the run asks for a cpuset, and
// the cgroup2 mirror for PSI on hybrid hosts; the one cgroup2 hierarchy on v2), with the run's
// limits written into it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cgroup/layout.h"
#include "runs/run_record.h"

namespace stagewatch {

struct RunCgroupSpec {
  std::string directory = "stagewatch";  // discovery.directory
  std::string stage;
  std::string run_id;
  // The cgroup beneath which the run's is made, the same path in every hierarchy (or a
  // directory of the keyed hierarchy). "": the caller's own cgroup in each hierarchy.
  std::string parent;
  RunLimits limits;
};

// One hierarchy the run's cgroup is made in.
struct RunHierarchy {
  std::string name;    // "memory", "cpu", "cpuacct", "cpuset" (v1), "unified" (cgroup2)
  std::string root;    // its mount point
  bool v2 = false;
  std::string parent;  // path of the parent cgroup within the hierarchy
  std::string path;    // path of the run's cgroup within the hierarchy
  std::string dir() const { return root + path; }
};

// A write into a cgroup file, and the flag it comes from (for messages).
struct CgroupWrite {
  std::string file;  // absolute
  std::string value;
  std::string flag;  // "--memory-max 200M"; "" for controller enabling
};

// What the kernel made of an asked-for cpuset: its effective file must list `wanted`.
struct CpusetCheck {
  std::string file;    // absolute: cpuset.cpus.effective (v1 cpuset.effective_cpus), or mems
  std::string wanted;  // the canonical list asked for
  std::string flag;    // "--cpuset-cpus 1"
};

struct RunCgroupPlan {
  std::vector<RunHierarchy> hierarchies;  // the keyed hierarchy first
  std::vector<CgroupWrite> enable;  // cgroup2 subtree_control writes, top down (v2 only)
  // v1 cpuset directories made for the run, top down: a v1 cpuset cgroup starts with no CPUs
  // and no nodes (no task may join it), so each takes its parent's where it has none.
  std::vector<std::string> cpuset_inherit;
  std::vector<CgroupWrite> limits;
  std::vector<CpusetCheck> cpuset_checks;
};

// Decides where the run's cgroup goes and what is written, reading only cgroup.controllers and
// cgroup.subtree_control of the parent on v2 (so fixture trees can stand in for cgroupfs).
// `proc_self_cgroup` is the text of /proc/self/cgroup.
absl::StatusOr<RunCgroupPlan> PlanRunCgroup(const CgroupLayout& layout,
                                            std::string_view proc_self_cgroup,
                                            const RunCgroupSpec& spec);

class RunCgroup {
 public:
  // Decides where the run's cgroup goes (PlanRunCgroup), making nothing yet.
  static absl::StatusOr<std::unique_ptr<RunCgroup>> Prepare(const CgroupLayout& layout,
                                                            const RunCgroupSpec& spec);
  // Makes the directories (failing when the run's exists already), enables controllers and
  // writes the limits; on any error removes what it made and says what the kernel refused.
  absl::Status Make();
  // Prepare, then Make.
  static absl::StatusOr<std::unique_ptr<RunCgroup>> Create(const CgroupLayout& layout,
                                                           const RunCgroupSpec& spec);
  // The cgroup a launcher (now dead) made for a run: `key_path` in the keyed hierarchy,
  // `<parent>/<directory>/<stage>/<run-id>`. In each other hierarchy it is the same
  // `<directory>/<stage>/<run-id>` beneath the parent or, where that has none, beneath the
  // parent's nearest ancestor that has it (a launcher's own cgroup sits higher up in a v1
  // hierarchy its service manager does not manage: / in cpu beside /user.slice/… in memory).
  // NotFound when its keyed directory is gone. Only Remove() removes it, reaping nothing.
  static absl::StatusOr<std::unique_ptr<RunCgroup>> Adopt(const CgroupLayout& layout,
                                                          const std::string& key_path);
  ~RunCgroup();  // Remove()s, if not done
  RunCgroup(const RunCgroup&) = delete;
  RunCgroup& operator=(const RunCgroup&) = delete;

  const RunCgroupPlan& plan() const { return plan_; }
  const std::string& key_path() const { return plan_.hierarchies.front().path; }
  // cgroup.procs of each directory: the command's process writes "0" to each before exec.
  const std::vector<std::string>& procs_files() const { return procs_files_; }
  // The host layout with each hierarchy rooted at the run's directory: pass it with the
  // path "/" to the cgroup readers (ReadMemoryStats, ReadCpuStats, ReadPsi).
  const CgroupLayout& reader_layout() const { return reader_layout_; }

  // Sends `sig` to every process in the run's cgroup and the sub-cgroups its command made;
  // returns the pids it went to.
  std::vector<pid_t> Signal(int sig) const;
  // Whether no task is left in the run's cgroup or its sub-cgroups, in any hierarchy; false
  // when that cannot be read.
  bool HoldsNoTask() const;

  // Removes the run's cgroup in every hierarchy with its sub-cgroups, deepest first, SIGKILLing
  // what is left in each (and reaping it: the launcher is its subreaper), retrying while the
  // kernel still counts exiting tasks; then the shared `<stage>` and `<directory>` cgroups
  // above it when no other run uses them, whoever made them (never the parent).
  absl::Status Remove();

 private:
  RunCgroup() = default;
  void SetReaderLayout(const CgroupLayout& layout);
  absl::Status MakeAndWrite();

  RunCgroupPlan plan_;
  CgroupLayout reader_layout_;
  std::vector<std::string> procs_files_;
  std::vector<bool> owned_;  // by hierarchy: its run directory is this object's to remove
  bool reap_ = true;         // Remove() reaps what it kills (the launcher is its subreaper)
  bool remove_when_destroyed_ = true;  // a launcher's; an adopted one only on Remove()
  bool removed_ = false;
};

}  // namespace stagewatch

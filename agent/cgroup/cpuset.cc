#include "cgroup/cpuset.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cgroup/cpu_list.h"
#include "string_util.h"

namespace stagewatch {
namespace {

struct CpusetFiles {
  const char* cpus;
  const char* mems;
};
constexpr CpusetFiles kV1Files{"cpuset.effective_cpus", "cpuset.effective_mems"};
constexpr CpusetFiles kV2Files{"cpuset.cpus.effective", "cpuset.mems.effective"};

std::string_view Parent(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string_view::npos ? std::string_view("/")
                                                       : path.substr(0, slash);
}

}  // namespace

absl::StatusOr<EffectiveCpuset> ReadEffectiveCpuset(const CgroupLayout& layout,
                                                    std::string_view cgroup_path,
                                                    const NumaTopology& host,
                                                    CgroupFileRead read) {
  // A controller is in one hierarchy at a time: v1's when it is mounted there.
  const auto v1 = layout.v1_roots.find("cpuset");
  const std::string root = v1 != layout.v1_roots.end() ? v1->second : layout.v2_root;
  const CpusetFiles& files = v1 != layout.v1_roots.end() ? kV1Files : kV2Files;
  if (!root.empty()) {
    for (std::string_view path = cgroup_path.empty() ? "/" : cgroup_path;; path = Parent(path)) {
      const std::string dir = path == "/" ? root : absl::StrCat(root, ToAbsl(path));
      const std::string cpus_file = absl::StrCat(dir, "/", files.cpus);
      absl::StatusOr<std::string> cpus_text = read(cpus_file);
      if (cpus_text.ok()) {
        absl::StatusOr<std::string> mems_text = read(absl::StrCat(dir, "/", files.mems));
        if (!mems_text.ok()) return mems_text.status();
        absl::StatusOr<std::vector<int>> cpus = ParseCpuList(*cpus_text, cpus_file);
        if (!cpus.ok()) return cpus.status();
        absl::StatusOr<std::vector<int>> mems =
            ParseCpuList(*mems_text, absl::StrCat(dir, "/", files.mems));
        if (!mems.ok()) return mems.status();
        return EffectiveCpuset{*std::move(cpus), *std::move(mems), dir};
      }
      if (!absl::IsNotFound(cpus_text.status())) return cpus_text.status();
      if (path == "/") break;
    }
  }
  return EffectiveCpuset{host.online_cpus, host.memory_nodes, ""};
}

}  // namespace stagewatch

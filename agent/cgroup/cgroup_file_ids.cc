#include "cgroup/cgroup_file_ids.h"

namespace stagewatch {

std::optional<uint32_t> CgroupFileIds::Of(std::string_view path, std::string_view cgroup_path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::string_view root = path.substr(0, slash);
  const std::string_view name = path.substr(slash + 1);
  // The root cgroup's directory is its hierarchy's root ("/" is not appended).
  if (cgroup_path != "/") {
    if (!root.ends_with(cgroup_path)) return std::nullopt;
    root.remove_suffix(cgroup_path.size());
  }
  std::string key;
  key.reserve(root.size() + 1 + name.size());
  key.append(root).append(1, '\n').append(name);
  if (auto found = ids_.find(key); found != ids_.end()) return found->second;
  if (ids_.size() >= kMaxIds) return std::nullopt;
  const uint32_t id = static_cast<uint32_t>(ids_.size());
  ids_.emplace(key, id);
  return id;
}

}  // namespace stagewatch

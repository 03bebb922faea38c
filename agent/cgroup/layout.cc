#include "cgroup/layout.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cgroup/cgroup_control.h"
#include "string_util.h"

namespace stagewatch {
namespace {

constexpr std::string_view kMountinfoPath = "/proc/self/mountinfo";

struct CgroupMount {
  std::string fstype;                    // "cgroup" or "cgroup2"
  std::string mount_point;               // unescaped
  std::vector<std::string> controllers;  // v1 only
};

// mountinfo escapes space, tab, newline and backslash as \ooo (octal).
std::string UnescapeMountField(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      std::string_view digits = field.substr(i + 1, 3);
      bool octal = true;
      for (char c : digits) octal = octal && c >= '0' && c <= '7';
      if (octal) {
        out.push_back(
            static_cast<char>((digits[0] - '0') * 64 + (digits[1] - '0') * 8 + (digits[2] - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

// Super options of a v1 mount that are not controllers.
bool IsV1MountOption(std::string_view opt) {
  static constexpr std::string_view kOptions[] = {
      "rw", "ro", "none", "all", "noprefix", "clone_children", "xattr", "cpuset_v2_mode",
      "favordynmods"};
  for (std::string_view known : kOptions) {
    if (opt == known) return true;
  }
  return opt.find('=') != std::string_view::npos;  // name=systemd, release_agent=...
}

// Parses one mountinfo line; nullopt for lines that are not cgroup mounts.
std::optional<CgroupMount> ParseCgroupMountLine(std::string_view line) {
  std::vector<std::string_view> fields = SplitNonEmpty(line, ' ');
  // id parent major:minor root mountpoint options [optional...] - fstype source superoptions
  size_t sep = 6;
  while (sep < fields.size() && fields[sep] != "-") ++sep;
  if (sep + 1 >= fields.size()) return std::nullopt;
  std::string_view fstype = fields[sep + 1];
  if (fstype != "cgroup" && fstype != "cgroup2") return std::nullopt;
  CgroupMount mount{std::string(fstype), UnescapeMountField(fields[4]), {}};
  if (fstype == "cgroup" && sep + 3 < fields.size()) {
    for (std::string_view opt : SplitNonEmpty(fields[sep + 3], ',')) {
      if (!IsV1MountOption(opt)) mount.controllers.emplace_back(opt);
    }
  }
  return mount;
}

bool HasController(const CgroupMount& mount, std::string_view controller) {
  for (const std::string& c : mount.controllers) {
    if (c == controller) return true;
  }
  return false;
}

}  // namespace

std::string_view CgroupModeName(CgroupMode mode) {
  switch (mode) {
    case CgroupMode::kV1:
      return "v1";
    case CgroupMode::kHybrid:
      return "hybrid";
    case CgroupMode::kV2:
      return "v2";
  }
  return "unknown";
}

absl::StatusOr<CgroupLayout> DetectCgroupLayout(std::string_view mountinfo_text,
                                                std::string_view fs_prefix) {
  CgroupLayout layout;
  bool any_v1 = false;
  bool v1_controllers = false;
  for (std::string_view line : SplitNonEmpty(mountinfo_text, '\n')) {
    std::optional<CgroupMount> mount = ParseCgroupMountLine(line);
    if (!mount) continue;
    if (mount->fstype == "cgroup2") {
      if (layout.v2_root.empty()) layout.v2_root = mount->mount_point;
      continue;
    }
    any_v1 = true;
    // Named hierarchies (name=systemd) carry no controller and do not make a host hybrid.
    if (!mount->controllers.empty()) v1_controllers = true;
    if (layout.v1_memory_root.empty() && HasController(*mount, "memory")) {
      layout.v1_memory_root = mount->mount_point;
    }
    for (const std::string& controller : mount->controllers) {
      layout.v1_roots.emplace(controller, mount->mount_point);  // the first mount wins
    }
  }

  const bool has_v2 = !layout.v2_root.empty();
  if (!has_v2 && !any_v1) {
    return absl::FailedPreconditionError(absl::StrCat("no cgroup filesystem is mounted (checked ",
                                                      ToAbsl(kMountinfoPath),
                                                      "); mount cgroup2 at /sys/fs/cgroup"));
  }
  layout.mode = !has_v2 ? CgroupMode::kV1 : v1_controllers ? CgroupMode::kHybrid : CgroupMode::kV2;
  if (has_v2) {
    const std::vector<std::string> offered =
        AvailableControllers(absl::StrCat(ToAbsl(fs_prefix), layout.v2_root));
    layout.v2_has_memory = std::find(offered.begin(), offered.end(), "memory") != offered.end();
  }

  // Key on the hierarchy where the memory controller tracks tasks: OOM kills and memory
  // signals then line up with the cgroups the kernel charges.
  if (layout.v2_has_memory) {
    layout.key = CGROUP_KEY_DEFAULT;
    layout.key_root = layout.v2_root;
  } else if (!layout.v1_memory_root.empty()) {
    layout.key = CGROUP_KEY_V1_MEMORY;
    layout.key_root = layout.v1_memory_root;
  } else if (has_v2) {
    layout.key = CGROUP_KEY_DEFAULT;
    layout.key_root = layout.v2_root;
  } else {
    return absl::FailedPreconditionError(
        "cgroup v1 is mounted without the memory controller and no cgroup2 is mounted "
        "(checked /proc/self/mountinfo); mount the v1 memory controller or cgroup2");
  }
  return layout;
}

std::string ControllerDir(const CgroupLayout& layout, std::string_view controller,
                          std::string_view cgroup_path) {
  std::string root;
  if (controller == "pressure" || layout.key == CGROUP_KEY_DEFAULT) {
    root = layout.v2_root;
  } else if (auto it = layout.v1_roots.find(std::string(controller)); it != layout.v1_roots.end()) {
    root = it->second;
  }
  if (root.empty()) return "";
  return cgroup_path == "/" ? root : absl::StrCat(root, ToAbsl(cgroup_path));
}

std::string KeyedDir(const CgroupLayout& layout, std::string_view cgroup_path) {
  return absl::StrCat(layout.key_root, ToAbsl(cgroup_path));
}

absl::StatusOr<CgroupLayout> DetectHostCgroupLayout() {
  std::ifstream in{std::string(kMountinfoPath)};
  if (!in) {
    return absl::UnavailableError(
        absl::StrCat("cannot read ", ToAbsl(kMountinfoPath), "; is /proc mounted?"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return DetectCgroupLayout(text.str());
}

}  // namespace stagewatch

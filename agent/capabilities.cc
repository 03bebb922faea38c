#include "capabilities.h"

#include <sys/capability.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace stagewatch {

absl::StatusOr<std::vector<int>> ParseCapabilityList(std::string_view list) {
  std::vector<int> caps;
  const absl::string_view text(list.data(), list.size());
  if (absl::AsciiStrToLower(absl::StripAsciiWhitespace(text)) == "none") return caps;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::string name = absl::AsciiStrToLower(absl::StripAsciiWhitespace(part));
    if (name == "all" || name == "cap_all") {
      return absl::InvalidArgumentError(
          "--capabilities.keep: \"all\" would keep every capability the agent was started "
          "with (as root: CAP_SYS_ADMIN and the rest) long after the probes needed them; name "
          "the ones you need, e.g. cap_net_bind_service, or leave the flag out (none)");
    }
    if (name == "none") {
      return absl::InvalidArgumentError(
          "--capabilities.keep: \"none\" stands alone; write either none or a list of "
          "capability names, e.g. cap_net_bind_service,cap_sys_ptrace");
    }
    if (!absl::StartsWith(name, "cap_")) name = absl::StrCat("cap_", name);
    cap_value_t value = 0;
    if (cap_from_name(name.c_str(), &value) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--capabilities.keep: unknown capability \"", std::string(part),
          "\"; write names as in capabilities(7), e.g. cap_net_bind_service"));
    }
    caps.push_back(value);
  }
  return caps;
}

absl::Status DropCapabilities(const std::vector<int>& keep) {
  auto kept = [&keep](int cap) { return std::find(keep.begin(), keep.end(), cap) != keep.end(); };
  // The bounding set first: dropping from it needs CAP_SETPCAP, which goes next.
  const bool can_bound = CAP_IS_SUPPORTED(CAP_SETPCAP) && prctl(PR_CAPBSET_READ, CAP_SETPCAP) == 1;
  cap_t current = cap_get_proc();
  cap_flag_value_t setpcap = CAP_CLEAR;
  if (current != nullptr) cap_get_flag(current, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap);
  if (can_bound && setpcap == CAP_SET) {
    for (int cap = 0; cap < static_cast<int>(cap_max_bits()); ++cap) {
      if (!kept(cap) && prctl(PR_CAPBSET_READ, cap) == 1) cap_drop_bound(cap);
    }
  }
  if (cap_reset_ambient() != 0 && errno != EINVAL) {
    if (current != nullptr) cap_free(current);
    return absl::InternalError(absl::StrCat("clearing ambient capabilities: ", strerror(errno)));
  }
  cap_t wanted = cap_init();  // all clear
  for (int cap : keep) {
    cap_flag_value_t have = CAP_CLEAR;
    if (current != nullptr) cap_get_flag(current, cap, CAP_PERMITTED, &have);
    if (have != CAP_SET) continue;
    const cap_value_t value = cap;
    cap_set_flag(wanted, CAP_PERMITTED, 1, &value, CAP_SET);
    cap_set_flag(wanted, CAP_EFFECTIVE, 1, &value, CAP_SET);
  }
  const int rc = cap_set_proc(wanted);
  const int error = errno;
  cap_free(wanted);
  if (current != nullptr) cap_free(current);
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("dropping capabilities: ", strerror(error)));
  }
  // A later exec (none is planned) must not regain what was dropped through setuid binaries.
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  return absl::OkStatus();
}

std::string EffectiveCapabilityNames() {
  cap_t current = cap_get_proc();
  if (current == nullptr) return "unknown";
  std::string names;
  for (int cap = 0; cap < static_cast<int>(cap_max_bits()); ++cap) {
    cap_flag_value_t value = CAP_CLEAR;
    cap_get_flag(current, cap, CAP_EFFECTIVE, &value);
    if (value != CAP_SET) continue;
    char* name = cap_to_name(cap);
    absl::StrAppend(&names, names.empty() ? "" : ",", name == nullptr ? "?" : name);
    cap_free(name);
  }
  cap_free(current);
  return names.empty() ? "none" : names;
}

}  // namespace stagewatch

#include "runs/run_owner.h"

#include <pwd.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/str_cat.h"

namespace stagewatch {

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

std::string UserName(uid_t uid) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) return "";
  return found->pw_name;
}

std::string RunOwnerText(const RunStart& s) {
  std::string who;
  if (s.uid) {
    who = s.user.empty() ? absl::StrCat("uid ", *s.uid)
                         : absl::StrCat(s.user, " (uid ", *s.uid, ")");
  }
  if (s.host.empty()) return who;
  return who.empty() ? absl::StrCat("on ", s.host) : absl::StrCat(who, " on ", s.host);
}

}  // namespace stagewatch

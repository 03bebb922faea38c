// Who started a run and where: the launcher's user (uid and login name) and the host.
#pragma once

#include <string>
#include <sys/types.h>

#include "runs/run_record.h"

namespace stagewatch {

std::string HostName();         // gethostname(); "" when it fails
std::string UserName(uid_t uid);  // the login name; "" for a uid without one
// "alice (uid 1000) on node-1", "uid 1234 on node-1", "on node-1".
std::string RunOwnerText(const RunStart& start);

}  // namespace stagewatch

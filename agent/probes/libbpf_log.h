// Sends libbpf's own messages (verifier logs, attach errors) through the agent's logger.
#pragma once

namespace stagewatch {
void RouteLibbpfLogs();
}  // namespace stagewatch

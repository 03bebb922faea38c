// What stagewatch exits with when it refuses what it was asked, before doing any of it: a flag
// that does not parse, a configuration that does not load. One rule for every subcommand,
// CLI11's own codes (105-109) never leak out.
#pragma once

namespace stagewatch {

// The agent, check-config, features, runs and advise.
inline constexpr int kExitRefused = 1;
// `stagewatch run`: like env(1), 125, so its own refusals never look like the codes of the
// command it runs (which it exits with, or 126, 127, 128+N).
inline constexpr int kExitLauncherRefused = 125;

}  // namespace stagewatch

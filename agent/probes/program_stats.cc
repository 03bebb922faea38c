#include "probes/program_stats.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace stagewatch {
namespace {

std::atomic<int> holds{0};  // live BpfStatsHold objects in this process

}  // namespace

std::vector<ProgramStats> ReadProgramStats(const bpf_object* object) {
  std::vector<ProgramStats> out;
  bpf_program* prog;
  bpf_object__for_each_program(prog, object) {
    const int fd = bpf_program__fd(prog);
    if (fd < 0) continue;  // not loaded: its variant was not chosen
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0) continue;
    out.push_back({bpf_program__name(prog), info.run_time_ns, info.run_cnt});
  }
  return out;
}

absl::StatusOr<std::unique_ptr<BpfStatsHold>> BpfStatsHold::Acquire() {
  const int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the kernel refused to count BPF run time (BPF_ENABLE_STATS: ", strerror(errno),
        "); it needs Linux 5.8 and CAP_SYS_ADMIN, or set sysctl kernel.bpf_stats_enabled=1"));
  }
  holds++;
  return std::unique_ptr<BpfStatsHold>(new BpfStatsHold(fd));
}

BpfStatsHold::~BpfStatsHold() {
  close(fd_);
  holds--;
}

bool BpfStatsEnabled() {
  if (holds.load() > 0) return true;
  std::ifstream in("/proc/sys/kernel/bpf_stats_enabled");
  int enabled = 0;
  return (in >> enabled) && enabled == 1;
}

}  // namespace stagewatch

#include "probes/program_stats.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <fstream>

namespace stagewatch {

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

bool BpfStatsEnabled() {
  std::ifstream in("/proc/sys/kernel/bpf_stats_enabled");
  int enabled = 0;
  return (in >> enabled) && enabled == 1;
}

}  // namespace stagewatch

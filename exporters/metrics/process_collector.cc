#include "exporters/metrics/process_collector.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "exporters/metrics/metric_builders.h"

namespace stagewatch::exporters {
namespace {

// /proc/self/stat fields after the command name, which may hold spaces.
std::vector<std::string> StatFields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  std::istringstream rest(line.substr(line.rfind(')') + 2));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;  // fields[0] is field 3 (state)
}

double BootTime() {
  std::ifstream in("/proc/stat");
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime" && in >> value) return value;
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

// Open file descriptors. Since Linux 6.2 the size of /proc/self/fd is their count, which costs
// one stat instead of a directory read that grows with every open file (the task state reader
// keeps one per stage thread). Older kernels report 0 there: count the entries.
double OpenFds() {
  struct stat fd_dir {};
  if (stat("/proc/self/fd", &fd_dir) == 0 && fd_dir.st_size > 0) {
    return static_cast<double>(fd_dir.st_size);
  }
  std::error_code ec;
  double fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    fds++;
  }
  return fds;
}

}  // namespace

absl::Status ProcessCollector::Collect(std::vector<prometheus::MetricFamily>* out) {
  const std::vector<std::string> f = StatFields();
  if (f.size() < 22) return absl::InternalError("cannot parse /proc/self/stat");
  static const double ticks = sysconf(_SC_CLK_TCK);
  static const double page = sysconf(_SC_PAGESIZE);
  // Field n of proc(5) is f[n - 3]: utime 14, stime 15, starttime 22, rss 24.
  const double cpu = (std::stod(f[11]) + std::stod(f[12])) / ticks;
  const double start = BootTime() + std::stod(f[19]) / ticks;
  const double rss = std::stod(f[21]) * page;
  const double fds = OpenFds();

  auto cpu_f = CounterFamily("process_cpu_seconds_total", "User and system CPU time of the agent.");
  AddCounter(&cpu_f, {}, cpu);
  auto rss_f = GaugeFamily("process_resident_memory_bytes", "Resident memory of the agent.");
  AddGauge(&rss_f, {}, rss);
  auto start_f = GaugeFamily("process_start_time_seconds", "Unix time the agent started.");
  AddGauge(&start_f, {}, start);
  auto fds_f = GaugeFamily("process_open_fds", "File descriptors the agent holds open.");
  AddGauge(&fds_f, {}, fds);
  for (auto* family : {&cpu_f, &rss_f, &start_f, &fds_f}) out->push_back(std::move(*family));
  return absl::OkStatus();
}

}  // namespace stagewatch::exporters

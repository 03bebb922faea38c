#include "exporters/metrics/process_collector.h"

#include <fcntl.h>
#include <unistd.h>

#include <vector>

#include "gtest/gtest.h"

namespace stagewatch::exporters {
namespace {

double OpenFds() {
  ProcessCollector collector;
  std::vector<prometheus::MetricFamily> families;
  EXPECT_TRUE(collector.Collect(&families).ok());
  for (const auto& family : families) {
    if (family.name == "process_open_fds" && family.metric.size() == 1) {
      return family.metric[0].gauge.value;
    }
  }
  ADD_FAILURE() << "no process_open_fds";
  return -1;
}

TEST(ProcessCollectorTest, OpenFdsFollowsFilesOpenedAndClosed) {
  const double before = OpenFds();
  EXPECT_GE(before, 3);  // at least stdin, stdout, stderr
  std::vector<int> fds;
  for (int i = 0; i < 100; i++) fds.push_back(open("/dev/null", O_RDONLY | O_CLOEXEC));
  EXPECT_EQ(OpenFds(), before + 100);
  for (int fd : fds) close(fd);
  EXPECT_EQ(OpenFds(), before);
}

}  // namespace
}  // namespace stagewatch::exporters

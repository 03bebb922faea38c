#include "thread_name.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace stagewatch {
namespace {

// What the kernel shows of the calling thread, as top and /proc/<pid>/task/*/stat read it.
std::string KernelNameOfThisThread() {
  std::ifstream comm("/proc/self/task/" + std::to_string(syscall(SYS_gettid)) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

TEST(ThreadNameTest, TheKernelShowsTheNameCutTo15Characters) {
  std::string seen, cut;
  std::thread([&] {
    NameThisThread("sw-sampler");
    seen = KernelNameOfThisThread();
    NameThisThread("sw-ring-task_states");
    cut = KernelNameOfThisThread();
  }).join();
  EXPECT_EQ(seen, "sw-sampler");
  EXPECT_EQ(cut, "sw-ring-task_st");
}

}  // namespace
}  // namespace stagewatch

// stagewatch_page_faults_total from each source (memory.fault_source: memcg and bpf) against
// the kernel's two counts of the same faults: memory.stat pgfault and the faulting process's
// getrusage.
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>

#include "gtest/gtest.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::AgentProcess;
using testing::ParseExposition;
using testing::TestCgroup;
using testing::ValueOr;

constexpr size_t kPage = 4096, kPages = 16384;  // 64 MiB

// Anonymous pages made and faulted in one at a time: one minor fault each (no huge pages).
void* FreshPages() {
  void* p = mmap(nullptr, kPages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) _exit(3);
  madvise(p, kPages * kPage, MADV_NOHUGEPAGE);
  return p;
}

void TouchPages() {
  volatile char* p = static_cast<char*>(FreshPages());
  for (size_t off = 0; off < kPages * kPage; off += kPage) p[off] = 1;
}

// The kernel faults the pages in for the process (get_user_pages()): no exception, no perf
// event, but a fault in memory.stat and getrusage alike.
void PopulatePages() {
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
  if (madvise(FreshPages(), kPages * kPage, MADV_POPULATE_WRITE) != 0) _exit(4);
}

struct Figures {
  double exported = 0, pgfault = 0, minflt = 0, majflt = 0;
};

// Runs `work` in a child in stage "faults" under an agent counting faults from `source`; the
// faults on /metrics once they have caught up, beside memory.stat's and the child's getrusage.
Figures FaultsOf(const std::string& source, const std::function<void()>& work) {
  TestCgroup cgroup("stagewatch/faults");
  const std::string config = testing::WriteTempConfig(
      "memory:\n  sample_interval: 100ms\n  fault_source: " + source + "\n");
  AgentProcess agent({"--config.file", config, "--web.listen-address", "127.0.0.1:0"});
  EXPECT_TRUE(agent.WaitListening()) << agent.log();
  unlink(config.c_str());

  int report[2];
  EXPECT_EQ(pipe(report), 0);
  pid_t child = cgroup.Spawn("sw-faults", [&] {
    work();
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    const double r[2] = {static_cast<double>(u.ru_minflt), static_cast<double>(u.ru_majflt)};
    (void)!write(report[1], r, sizeof(r));
  });
  EXPECT_EQ(testing::WaitForChild(child), 0);
  double r[2] = {0, 0};
  EXPECT_EQ(read(report[0], r, sizeof(r)), static_cast<ssize_t>(sizeof(r)));
  close(report[0]);
  close(report[1]);

  Figures f{.minflt = r[0], .majflt = r[1]};
  const std::string series = R"(stagewatch_page_faults_total{pipeline_stage="faults",fault_type=")";
  // memory.stat folds per-CPU counts in within 2 s (mm/memcontrol.c FLUSH_TIME); the agent
  // reads them on its 100 ms sampler clock, the probe's map every few seconds.
  const bool caught_up = testing::WaitUntil(
      [&] {
        f.pgfault = testing::KeyedValue(cgroup.dir("memory") + "/memory.stat",
                                        cgroup.v2() ? "pgfault" : "total_pgfault");
        const testing::Scrape m = ParseExposition(agent.Get("/metrics").value_or(""));
        f.exported = ValueOr(m, series + "minor\"}", 0) + ValueOr(m, series + "major\"}", 0);
        return f.exported >= 0.98 * f.pgfault && f.pgfault >= 0.98 * f.minflt;
      },
      10000);
  EXPECT_TRUE(caught_up) << agent.log();
  std::printf("[ figures  ] %s: exported %.0f, memory.stat pgfault %.0f, ru_minflt %.0f "
              "ru_majflt %.0f\n", source.c_str(), f.exported, f.pgfault, f.minflt, f.majflt);
  return f;
}

void ExpectAgree(const Figures& f) {
  EXPECT_NEAR(f.exported, f.pgfault, 0.02 * f.pgfault);
  EXPECT_NEAR(f.exported, f.minflt + f.majflt, 0.02 * f.exported);
  EXPECT_GE(f.exported, kPages);
}

TEST(PageFaultsE2E, FromMemcgTheyMatchMemoryStatAndGetrusage) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  ExpectAgree(FaultsOf("memcg", TouchPages));
}

TEST(PageFaultsE2E, FromBpfTheyMatchMemoryStatAndGetrusage) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  ExpectAgree(FaultsOf("bpf", TouchPages));
}

// By default the kernel's own counts are read: faults the kernel takes for the process
// (MADV_POPULATE_WRITE, MAP_POPULATE, mlock) raise no event a BPF program sees, yet are faults.
TEST(PageFaultsE2E, ByDefaultFaultsTheKernelTakesForTheProcessAreCounted) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  ExpectAgree(FaultsOf("auto", PopulatePages));
}

// `stagewatch features` says which source counts faults and why.
TEST(PageFaultsE2E, FeaturesSaysWhichSourceAndWhy) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup cgroup("stagewatch/faults");
  const bool memcg = cgroup.layout().key == CGROUP_KEY_V1_MEMORY || cgroup.layout().v2_has_memory;
  AgentProcess by_default({"features", "--json"});
  by_default.WaitExit(60000);
  EXPECT_NE(by_default.log().find(std::string(R"("page_faults":{"source":")") +
                                  (memcg ? "memcg" : "bpf") + "\""),
            std::string::npos)
      << by_default.log();

  const std::string config = testing::WriteTempConfig("memory:\n  fault_source: bpf\n");
  AgentProcess asked({"--config.file", config, "features"});
  asked.WaitExit(60000);
  unlink(config.c_str());
  EXPECT_NE(asked.log().find("page faults bpf (memory.fault_source is bpf"), std::string::npos)
      << asked.log();
}

}  // namespace
}  // namespace stagewatch

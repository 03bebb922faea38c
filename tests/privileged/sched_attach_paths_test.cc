// The two forms of the scheduler probe, loaded side by side and counting the same workload:
// the fastest the kernel offers (tp_btf on kernels with BPF trampolines, such as the VM
// stage's 6.1) and the raw tracepoint that --bpf.attach=raw_tp forces. Where the kernel has
// no trampolines both are raw tracepoints, and still must agree.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include "gtest/gtest.h"
#include "probes/attach_policy.h"
#include "signals/sched/sched_probe.h"
#include "test_support.h"

namespace stagewatch {
namespace {

using testing::TestCgroup;

std::unique_ptr<SchedProbe> StartWith(cgroup_key_hierarchy key, AttachPolicy policy) {
  auto probe =
      SchedProbe::Start({.key = key, .features = ApplyAttachPolicy(ProbeKernelFeatures(), policy)});
  EXPECT_TRUE(probe.ok()) << probe.status();
  return probe.ok() ? std::move(*probe) : nullptr;
}

sched_cgroup_stats StatsOf(const SchedProbe& probe, uint64_t id) {
  auto all = probe.ReadCgroups();
  auto it = all.find(id);
  return it == all.end() ? sched_cgroup_stats{} : it->second;
}

uint64_t Waits(const sched_cgroup_stats& s) {
  uint64_t n = s.runq_latency.above;
  for (int i = 0; i < HIST_SLOTS; i++) n += s.runq_latency.slots[i];
  return n;
}

TEST(SchedAttachPathsTest, TpBtfAndRawTracepointCountTheSameSwitchesWaitsAndCpuTime) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  TestCgroup cgroup("stagewatch/both-paths");
  auto fastest = StartWith(cgroup.layout().key, AttachPolicy::kAuto);
  auto raw = StartWith(cgroup.layout().key, AttachPolicy::kRawTracepoint);
  ASSERT_NE(fastest, nullptr);
  ASSERT_NE(raw, nullptr);
  const std::string fastest_type = fastest->statuses()[0].attach_type;
  EXPECT_EQ(fastest_type, ProbeKernelFeatures().tracing ? "tp_btf" : "raw_tracepoint");
  EXPECT_EQ(raw->statuses()[0].attach_type, "raw_tracepoint");
  for (const SchedProbe* p : {fastest.get(), raw.get()}) {
    for (const ProbeStatus& s : p->statuses()) ASSERT_TRUE(s.attached) << s.name << ": " << s.error;
  }

  // Ping-pong on one CPU (voluntary switches) and two spinners sharing the other (preemption).
  int ping[2], pong[2];
  ASSERT_EQ(pipe(ping), 0);
  ASSERT_EQ(pipe(pong), 0);
  constexpr int kRounds = 3000;
  auto pinger = [&](int in, int out, bool first) {
    return [=] {
      testing::PinTo(1);
      char b = 0;
      for (int i = 0; i < kRounds; i++) {
        if (first) (void)!write(out, &b, 1);
        (void)!read(in, &b, 1);
        if (!first) (void)!write(out, &b, 1);
      }
    };
  };
  auto spinner = [] {
    testing::PinTo(0);
    testing::BusyFor(std::chrono::milliseconds(1000));
  };
  std::vector<pid_t> children = {cgroup.Spawn("sw-ping", pinger(pong[0], ping[1], true)),
                                 cgroup.Spawn("sw-pong", pinger(ping[0], pong[1], false)),
                                 cgroup.Spawn("sw-spin-a", spinner),
                                 cgroup.Spawn("sw-spin-b", spinner)};
  for (pid_t pid : children) ASSERT_EQ(testing::WaitForChild(pid), -0);

  const sched_cgroup_stats a = StatsOf(*fastest, cgroup.id());
  const sched_cgroup_stats b = StatsOf(*raw, cgroup.id());
  std::printf("%s vs raw_tracepoint: voluntary %.0f / %.0f, nonvoluntary %.0f / %.0f, "
              "waits %.0f / %.0f, run-queue wait %.3f / %.3f ms, on-cpu %.3f / %.3f ms\n",
              fastest_type.c_str(), double(a.voluntary_switches), double(b.voluntary_switches),
              double(a.nonvoluntary_switches), double(b.nonvoluntary_switches), double(Waits(a)),
              double(Waits(b)), a.runq_latency.sum / 1e6, b.runq_latency.sum / 1e6,
              a.oncpu_ns / 1e6, b.oncpu_ns / 1e6);
  ASSERT_GT(a.voluntary_switches, static_cast<uint64_t>(kRounds));
  ASSERT_GT(a.nonvoluntary_switches, 10u);
  // The limits of the accuracy test against /proc (sched_probe_test.cc): 2% for counts,
  // 5% for times. Both probes see every switch, so they agree at least as closely.
  EXPECT_NEAR(a.voluntary_switches, b.voluntary_switches, 0.02 * b.voluntary_switches);
  EXPECT_NEAR(a.nonvoluntary_switches, b.nonvoluntary_switches, 0.02 * b.nonvoluntary_switches);
  EXPECT_NEAR(Waits(a), Waits(b), 0.02 * Waits(b));
  EXPECT_NEAR(a.runq_latency.sum, b.runq_latency.sum, 0.05 * b.runq_latency.sum);
  EXPECT_NEAR(a.oncpu_ns, b.oncpu_ns, 0.05 * b.oncpu_ns);
}

}  // namespace
}  // namespace stagewatch

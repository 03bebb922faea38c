#include "signals/memory/task_states_probe.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "task_states.skel.h"

namespace stagewatch {

// The record layout is shared with bpf/task_states.h; a change there must be a change here.
static_assert(sizeof(task_state_record) == 16);
static_assert(offsetof(task_state_record, state) == 8);
static_assert(offsetof(task_state_record, exit_state) == 12);

namespace {

constexpr const char* kProbe = "task_states";

// include/linux/sched.h, stable since 4.14 (the letters "RSDTtXZPI" of fs/proc/array.c).
constexpr uint32_t kTaskReport = 0x7f;  // R S D T t X Z P: the states /proc reports
constexpr uint32_t kTaskReportIdle = kTaskReport + 1;
constexpr uint32_t kTaskUninterruptible = 0x02;
constexpr uint32_t kTaskNoload = 0x400;
constexpr uint32_t kTaskIdle = kTaskUninterruptible | kTaskNoload;
constexpr uint32_t kTaskRtlockWait = 0x1000;  // PREEMPT_RT only, since 5.15
constexpr uint32_t kTaskFrozen = 0x8000;      // since 6.1; the bit was unused before
constexpr char kLetters[] = "RSDTtXZPI";

// Records are read this many at a time; the kernel fills at most its seq_file buffer (8
// pages) per read.
constexpr size_t kRecordsPerRead = 4096;

int Fls(uint32_t x) { return x == 0 ? 0 : 32 - __builtin_clz(x); }

}  // namespace

char StateLetter(uint32_t state, uint32_t exit_state) {
  uint32_t report = (state | exit_state) & kTaskReport;
  if ((state & kTaskIdle) == kTaskIdle) report = kTaskReportIdle;
  // The kernel shows a frozen task, or one waiting for an RT lock, as uninterruptible.
  if ((state & kTaskRtlockWait) || (state & kTaskFrozen)) report = kTaskUninterruptible;
  return kLetters[Fls(report)];
}

std::vector<ProbeStatus> TaskStatesProbe::NotStarted(const std::string& why) {
  return {{.name = kProbe, .error = why}};
}

void DestroyTaskStatesSkeleton(task_states_bpf* skel) { task_states_bpf__destroy(skel); }
void DestroyTaskStatesLink(bpf_link* link) { bpf_link__destroy(link); }

TaskStatesProbe::~TaskStatesProbe() = default;

absl::StatusOr<std::unique_ptr<TaskStatesProbe>> TaskStatesProbe::Start(
    const TaskStatesProbeOptions& options) {
  constexpr const char* kFallback = "; task states are read from /proc";
  if (!options.enabled) {
    return absl::FailedPreconditionError(
        absl::StrCat("turned off by memory.task_iterator: false", kFallback));
  }
  if (!options.features.btf) {
    return absl::FailedPreconditionError(
        absl::StrCat("no kernel BTF, which task iterators need", kFallback));
  }
  std::unique_ptr<TaskStatesProbe> probe(new TaskStatesProbe());
  LIBBPF_OPTS(bpf_object_open_opts, open_opts);
  if (!options.features.btf_path.empty()) {
    open_opts.btf_custom_path = options.features.btf_path.c_str();
  }
  probe->skel_.reset(task_states_bpf__open_opts(&open_opts));
  if (!probe->skel_) {
    return absl::InternalError(
        absl::StrCat("opening the task_states BPF object: ", strerror(errno)));
  }
  task_states_bpf* skel = probe->skel_.get();
  skel->rodata->cgroup_key = options.key;
  if (int err = task_states_bpf__load(skel); err) {
    return absl::FailedPreconditionError(absl::StrCat(
        "loading the task iterator (iter/task): ", strerror(-err),
        "; run with --log.level=debug to see the verifier log", kFallback));
  }
  probe->link_.reset(bpf_program__attach_iter(skel->progs.task_states, nullptr));
  if (!probe->link_) {
    return absl::FailedPreconditionError(
        absl::StrCat("attaching the task iterator: ", strerror(errno), kFallback));
  }
  probe->status_ = {.name = kProbe, .attach_type = "iter", .attached = true};
  return probe;
}

absl::StatusOr<TaskStatesByCgroup> TaskStatesProbe::Count() const {
  // Each iterator fd is one pass from the first task; it ends at EOF.
  const int fd = bpf_iter_create(bpf_link__fd(link_.get()));
  if (fd < 0) {
    return absl::ErrnoToStatus(errno, "starting a pass of the task_states iterator");
  }
  absl::Cleanup closer = [fd] { close(fd); };
  TaskStatesByCgroup counts;
  std::vector<task_state_record> records(kRecordsPerRead);
  size_t pending = 0;  // bytes of a record split across two reads
  while (true) {
    char* buf = reinterpret_cast<char*>(records.data());
    const ssize_t n = read(fd, buf + pending, records.size() * sizeof(records[0]) - pending);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, "reading the task_states iterator");
    if (n == 0) break;
    const size_t bytes = pending + static_cast<size_t>(n);
    const size_t whole = bytes / sizeof(task_state_record);
    for (size_t i = 0; i < whole; i++) {
      const task_state_record& r = records[i];
      TaskStateCounts& c = counts[r.cgroup_id];
      // StateLetter() gives only letters CounterFor() knows.
      ++*CounterFor(StateLetter(r.state, r.exit_state), c);
    }
    pending = bytes - whole * sizeof(task_state_record);
    if (pending) memmove(buf, buf + whole * sizeof(task_state_record), pending);
  }
  return counts;
}

std::vector<ProgramStats> TaskStatesProbe::program_stats() const {
  return ReadProgramStats(skel_->obj);
}

}  // namespace stagewatch

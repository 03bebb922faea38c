// A churn of short-lived cgroups with a process in each, for cgroup_scale.sh: makes COUNT
// cgroups PARENT/stage_<n % STAGES>/churn_<n> (n from START), one after another. Into each a
// child process moves itself and exits; every OOM_EVERY-th child first gets its cgroup a
// 16 MiB memory limit (swap none) and touches 64 MiB, so the kernel OOM-kills it. Each cgroup
// is removed once its child is reaped. Prints what it made, for the script to hold the agent's
// counts against: "cgroups N exits N oom_kills K", K as the kernel's own oom_kill count of
// each cgroup says (v1 memory.oom_control, v2 memory.events), read before the removal.
// Usage: cgroup_churn PARENT STAGES START COUNT [OOM_EVERY, 0 for none]
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace {

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  f.flush();
  return static_cast<bool>(f);
}

// The cgroup's kernel oom_kill count: "oom_kill N" in memory.oom_control (v1) or
// memory.events (v2).
long OomKills(const std::string& dir) {
  for (const char* file : {"/memory.oom_control", "/memory.events"}) {
    std::ifstream f(dir + file);
    std::string key;
    long value = 0;
    while (f >> key >> value) {
      if (key == "oom_kill") return value;
    }
  }
  return 0;
}

// Gives the cgroup a memory limit and no swap, v1 or v2, whichever files it has.
bool Limit(const std::string& dir, const std::string& bytes) {
  if (Exists(dir + "/memory.limit_in_bytes")) {
    const bool ok = WriteFile(dir + "/memory.limit_in_bytes", bytes);
    if (Exists(dir + "/memory.memsw.limit_in_bytes")) {
      WriteFile(dir + "/memory.memsw.limit_in_bytes", bytes);
    }
    return ok;
  }
  if (Exists(dir + "/memory.swap.max")) WriteFile(dir + "/memory.swap.max", "0");
  return WriteFile(dir + "/memory.max", bytes);
}

[[noreturn]] void Child(const std::string& dir, bool oom) {
  if (!WriteFile(dir + "/cgroup.procs", "0")) _exit(2);
  if (oom) {
    const size_t size = 64 << 20;
    char* p = static_cast<char*>(
        mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (p == MAP_FAILED) _exit(3);
    for (size_t i = 0; i < size; i += 4096) p[i] = 1;
    _exit(4);  // not killed: the limit did not hold
  }
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s PARENT STAGES START COUNT [OOM_EVERY]\n", argv[0]);
    return 2;
  }
  const std::string parent = argv[1];
  const long stages = std::atol(argv[2]), start = std::atol(argv[3]), count = std::atol(argv[4]);
  const long oom_every = argc > 5 ? std::atol(argv[5]) : 0;
  if (stages <= 0 || start < 0 || count < 0 || oom_every < 0) {
    std::fprintf(stderr, "cgroup_churn: STAGES must be above 0, the others 0 or more\n");
    return 2;
  }
  long exits = 0, kills = 0, unkilled = 0;
  for (long n = start; n < start + count; n++) {
    const std::string stage = parent + "/stage_" + std::to_string(n % stages);
    const std::string dir = stage + "/churn_" + std::to_string(n);
    mkdir(stage.c_str(), 0755);  // EEXIST is fine
    if (mkdir(dir.c_str(), 0755) != 0) {
      std::fprintf(stderr, "cgroup_churn: mkdir %s: %s\n", dir.c_str(), std::strerror(errno));
      return 1;
    }
    const bool oom = oom_every > 0 && (n + 1) % oom_every == 0;
    if (oom && !Limit(dir, std::to_string(16 << 20))) {
      std::fprintf(stderr, "cgroup_churn: cannot limit %s\n", dir.c_str());
      return 1;
    }
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("cgroup_churn: fork");
      return 1;
    }
    if (pid == 0) Child(dir, oom);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 4) {
      std::fprintf(stderr, "cgroup_churn: the child in %s failed (%d)\n", dir.c_str(),
                   WEXITSTATUS(status));
      return 1;
    }
    exits++;
    if (oom) {
      kills += OomKills(dir);
      unkilled += WIFEXITED(status);
    }
    // A cgroup is removable once its last task is reaped (v1 may need a moment more).
    for (int tries = 0; rmdir(dir.c_str()) != 0; tries++) {
      if (errno != EBUSY || tries == 100) {
        std::fprintf(stderr, "cgroup_churn: rmdir %s: %s\n", dir.c_str(), std::strerror(errno));
        return 1;
      }
      usleep(1000);
    }
  }
  std::printf("cgroups %ld exits %ld oom_kills %ld\n", count, exits, kills);
  if (unkilled) std::fprintf(stderr, "cgroup_churn: %ld children outlived their limit\n", unkilled);
  return 0;
}

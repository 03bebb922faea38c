// Attaches one program of bench/reference.bpf.c until SIGINT or SIGTERM, for bench/bpf_cost.sh.
//
//   load_reference empty_switch|hash_switch|empty_fault|empty_migrate
//
// Prints "ready" once attached.
#include <bpf/libbpf.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "reference.skel.h"

namespace {

volatile sig_atomic_t stop = 0;
void OnSignal(int) { stop = 1; }

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc == 2 ? argv[1] : "";
  reference_bpf* skel = reference_bpf__open();
  if (!skel) {
    fprintf(stderr, "opening reference.bpf.o: %s\n", strerror(errno));
    return 1;
  }
  bpf_program* chosen = nullptr;
  bpf_program* prog;
  bpf_object__for_each_program(prog, skel->obj) {
    const bool match = std::string(bpf_program__name(prog)) == "ref_" + which;
    bpf_program__set_autoload(prog, match);
    if (match) chosen = prog;
  }
  if (!chosen) {
    fprintf(stderr, "usage: %s empty_switch|hash_switch|empty_fault|empty_migrate\n", argv[0]);
    reference_bpf__destroy(skel);
    return 2;
  }
  bpf_link* link = nullptr;
  if (reference_bpf__load(skel) != 0 || !(link = bpf_program__attach(chosen))) {
    fprintf(stderr, "loading or attaching ref_%s: %s\n", which.c_str(), strerror(errno));
    reference_bpf__destroy(skel);
    return 1;
  }
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  printf("ready\n");
  fflush(stdout);
  while (!stop) pause();
  bpf_link__destroy(link);
  reference_bpf__destroy(skel);
  return 0;
}

// Reads BPF hash maps keyed by cgroup id, the kernel side's per-cgroup aggregates.
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace stagewatch {

// Calls `fn(cgroup_id, value)` for every entry of a BPF_MAP_TYPE_PERCPU_HASH whose values are
// `Value`, with the per-CPU copies already added up by `add(sum, one_cpu)`.
template <typename Value>
void ForEachPerCpuEntry(int map_fd, const std::function<void(Value&, const Value&)>& add,
                        const std::function<void(uint64_t, const Value&)>& fn) {
  static const int cpus = libbpf_num_possible_cpus();
  // The kernel copies each CPU's value into an 8-byte aligned slot.
  const size_t stride = (sizeof(Value) + 7) & ~size_t{7};
  std::vector<unsigned char> buffer(stride * cpus);
  uint64_t key = 0, next = 0;
  const void* prev = nullptr;
  while (bpf_map_get_next_key(map_fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    if (bpf_map_lookup_elem(map_fd, &key, buffer.data()) != 0) continue;  // deleted meanwhile
    Value sum{};
    for (int cpu = 0; cpu < cpus; cpu++) {
      add(sum, *reinterpret_cast<const Value*>(buffer.data() + stride * cpu));
    }
    fn(key, sum);
  }
}

}  // namespace stagewatch

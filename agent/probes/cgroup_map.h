// Reads BPF per-CPU hash maps (the kernel side's per-cgroup aggregates), summing each entry's
// per-CPU copies. A whole map is read with BPF_MAP_LOOKUP_BATCH, up to 256 entries a
// system call; where the kernel refuses batch operations (before Linux 5.6, or a map type
// without them) it is walked one entry at a time, two system calls an entry.
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"

namespace stagewatch {

template <typename Key, typename Value>
using PerCpuEntries = std::vector<std::pair<Key, Value>>;

namespace cgroup_map_internal {

inline int PossibleCpus() {
  static const int cpus = libbpf_num_possible_cpus();
  return cpus;
}

// The kernel copies each CPU's value into an 8-byte aligned slot, in CPU order.
template <typename Value>
constexpr size_t Stride() {
  return (sizeof(Value) + 7) & ~size_t{7};
}

// Entries a batch read asks for per system call: up to 256, in at most 64 KiB of buffers
// (below malloc's mmap threshold, so a read maps no memory of its own).
template <typename Key, typename Value>
uint32_t DefaultBatchEntries() {
  const size_t entry = sizeof(Key) + Stride<Value>() * PossibleCpus();
  return static_cast<uint32_t>(std::clamp<size_t>((64 << 10) / entry, 1, 256));
}

template <typename Value, typename Add>
Value SumCpus(const unsigned char* slots, int cpus, const Add& add) {
  Value sum{};
  for (int cpu = 0; cpu < cpus; cpu++) {
    Value one;
    std::memcpy(&one, slots + Stride<Value>() * cpu, sizeof(Value));
    add(sum, one);
  }
  return sum;
}

}  // namespace cgroup_map_internal

// The map read with BPF_MAP_LOOKUP_BATCH, `batch_entries` at a time (0: the default).
// Returns 0, or the negative errno of a refused or failed call (nothing is returned in `out`
// then). An entry deleted during the read is either in the result or not, never twice.
template <typename Key, typename Value, typename Add>
int ReadPerCpuHashBatched(int map_fd, const Add& add, PerCpuEntries<Key, Value>* out,
                          uint32_t batch_entries = 0) {
  static_assert(std::is_trivially_copyable_v<Key> && std::is_trivially_copyable_v<Value>);
  using namespace cgroup_map_internal;
  const int cpus = PossibleCpus();
  const size_t value_bytes = Stride<Value>() * cpus;
  uint32_t capacity = batch_entries ? batch_entries : DefaultBatchEntries<Key, Value>();
  std::vector<unsigned char> keys, values;
  // libbpf (1.0 on) returns the negative errno. The position between calls is opaque: a
  // bucket index (u32) for hash maps.
  uint64_t in_batch = 0, out_batch = 0;
  bool first = true;
  PerCpuEntries<Key, Value> read;
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  for (;;) {
    keys.resize(size_t{capacity} * sizeof(Key));
    values.resize(size_t{capacity} * value_bytes);
    uint32_t count = capacity;
    int err = bpf_map_lookup_batch(map_fd, first ? nullptr : &in_batch, &out_batch, keys.data(),
                                   values.data(), &count, &opts);
    // ENOSPC with nothing read: one hash bucket holds more entries than the buffer.
    if (err == -ENOSPC && count == 0 && capacity < (1u << 20)) {
      capacity *= 2;
      continue;
    }
    if (err != 0 && err != -ENOENT) return err;
    count = std::min(count, capacity);
    for (uint32_t i = 0; i < count; i++) {
      Key key;
      std::memcpy(&key, keys.data() + size_t{i} * sizeof(Key), sizeof(Key));
      read.emplace_back(key, SumCpus<Value>(values.data() + size_t{i} * value_bytes, cpus, add));
    }
    if (err == -ENOENT) break;  // the end of the map, with the last entries
    in_batch = out_batch;
    first = false;
  }
  *out = std::move(read);
  return 0;
}

// The map walked one entry at a time (BPF_MAP_GET_NEXT_KEY, then BPF_MAP_LOOKUP_ELEM).
template <typename Key, typename Value, typename Add>
PerCpuEntries<Key, Value> ReadPerCpuHashPerEntry(int map_fd, const Add& add) {
  using namespace cgroup_map_internal;
  const int cpus = PossibleCpus();
  std::vector<unsigned char> buffer(Stride<Value>() * cpus);
  PerCpuEntries<Key, Value> out;
  // A walk whose current key was deleted starts again at the first key: keep each key once.
  absl::flat_hash_set<std::string> seen;
  Key key{}, next{};
  const void* prev = nullptr;
  while (bpf_map_get_next_key(map_fd, prev, &next) == 0) {
    key = next;
    prev = &key;
    if (!seen.insert(std::string(reinterpret_cast<const char*>(&key), sizeof(Key))).second) {
      continue;
    }
    if (bpf_map_lookup_elem(map_fd, &key, buffer.data()) != 0) continue;  // deleted meanwhile
    out.emplace_back(key, SumCpus<Value>(buffer.data(), cpus, add));
  }
  return out;
}

// Every entry of a BPF_MAP_TYPE_PERCPU_HASH with its per-CPU copies added up by
// `add(sum, one_cpu)`: batched, or walked where batch reads fail (any failure: the walk is
// the path every kernel has, and a batch read is all or nothing).
template <typename Key, typename Value, typename Add>
PerCpuEntries<Key, Value> ReadPerCpuHash(int map_fd, const Add& add) {
  PerCpuEntries<Key, Value> out;
  if (ReadPerCpuHashBatched<Key, Value>(map_fd, add, &out) == 0) return out;
  return ReadPerCpuHashPerEntry<Key, Value>(map_fd, add);
}

// Calls `fn(index, cpu, one_cpu_value)` for each CPU's copy of the first `count` entries of a
// BPF_MAP_TYPE_PERCPU_ARRAY: batched, or one entry at a time where batch reads fail.
template <typename Value, typename Fn>
void ForEachPerCpuArrayCopy(int map_fd, uint32_t count, const Fn& fn) {
  static_assert(std::is_trivially_copyable_v<Value>);
  using namespace cgroup_map_internal;
  const int cpus = PossibleCpus();
  const size_t value_bytes = Stride<Value>() * cpus;
  auto each_cpu = [&](uint32_t index, const unsigned char* slots) {
    for (int cpu = 0; cpu < cpus; cpu++) {
      Value one;
      std::memcpy(&one, slots + Stride<Value>() * cpu, sizeof(Value));
      fn(index, cpu, one);
    }
  };
  const uint32_t capacity = DefaultBatchEntries<uint32_t, Value>();
  std::vector<uint32_t> keys(capacity);
  std::vector<unsigned char> values(size_t{capacity} * value_bytes);
  // An array's position between calls is the next index (u32).
  uint32_t done = 0, in_batch = 0, out_batch = 0;
  LIBBPF_OPTS(bpf_map_batch_opts, opts);
  while (done < count) {
    uint32_t n = std::min(capacity, count - done);
    const int err = bpf_map_lookup_batch(map_fd, done ? &in_batch : nullptr, &out_batch,
                                         keys.data(), values.data(), &n, &opts);
    if (err != 0 && err != -ENOENT) break;  // read the rest one entry at a time
    n = std::min(n, count - done);
    for (uint32_t i = 0; i < n; i++) each_cpu(keys[i], values.data() + size_t{i} * value_bytes);
    done += n;
    if (err == -ENOENT || n == 0) return;
    in_batch = out_batch;
  }
  for (uint32_t index = done; index < count; index++) {
    if (bpf_map_lookup_elem(map_fd, &index, values.data()) == 0) each_cpu(index, values.data());
  }
}

// One entry of a per-CPU hash, its per-CPU copies added up; nullopt when the key is absent.
// For reads of a few keys where the map holds thousands (a run's cgroups at its end).
template <typename Key, typename Value, typename Add>
std::optional<Value> LookupPerCpu(int map_fd, const Key& key, const Add& add) {
  using namespace cgroup_map_internal;
  const int cpus = PossibleCpus();
  std::vector<unsigned char> buffer(Stride<Value>() * cpus);
  if (bpf_map_lookup_elem(map_fd, &key, buffer.data()) != 0) return std::nullopt;
  return SumCpus<Value>(buffer.data(), cpus, add);
}

// One entry of a per-CPU hash, `fn(cpu, one_cpu_value)` for each CPU's copy; false when the
// key is absent. For a caller that splits one key's figures by CPU (by node).
template <typename Key, typename Value, typename Fn>
bool ForEachCpuCopyOf(int map_fd, const Key& key, const Fn& fn) {
  using namespace cgroup_map_internal;
  const int cpus = PossibleCpus();
  std::vector<unsigned char> buffer(Stride<Value>() * cpus);
  if (bpf_map_lookup_elem(map_fd, &key, buffer.data()) != 0) return false;
  for (int cpu = 0; cpu < cpus; cpu++) {
    Value one;
    std::memcpy(&one, buffer.data() + Stride<Value>() * cpu, sizeof(Value));
    fn(cpu, one);
  }
  return true;
}

// Calls `fn(cgroup_id, value)` for every entry of a per-CPU hash keyed by cgroup id.
template <typename Value>
void ForEachPerCpuEntry(int map_fd, const std::function<void(Value&, const Value&)>& add,
                        const std::function<void(uint64_t, const Value&)>& fn) {
  for (const auto& [id, sum] : ReadPerCpuHash<uint64_t, Value>(map_fd, add)) fn(id, sum);
}

}  // namespace stagewatch

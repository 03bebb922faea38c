// Batch and per-entry reads of real per-CPU hash maps give the same entries, with the per-CPU
// copies summed: across many batches, with one-entry batches, and while entries are deleted.
#include "probes/cgroup_map.h"

#include <bpf/bpf.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "test_support.h"

namespace stagewatch {
namespace {

// 12 bytes: each CPU's copy sits in a 16-byte slot, so a wrong stride shows.
struct Wide {
  uint64_t a;
  uint32_t b;
};
void AddWide(Wide& sum, const Wide& cpu) {
  sum.a += cpu.a;
  sum.b += cpu.b;
}

struct Pair {
  uint64_t first;
  uint64_t second;
};
void AddCount(uint64_t& sum, const uint64_t& cpu) { sum += cpu; }

const int kCpus = libbpf_num_possible_cpus();

class PerCpuMap {
 public:
  PerCpuMap(uint32_t key_size, uint32_t value_size, uint32_t max_entries) {
    fd_ = bpf_map_create(BPF_MAP_TYPE_PERCPU_HASH, "sw_map_test", key_size, value_size,
                         max_entries, nullptr);
  }
  ~PerCpuMap() {
    if (fd_ >= 0) close(fd_);
  }
  PerCpuMap(const PerCpuMap&) = delete;
  PerCpuMap& operator=(const PerCpuMap&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

// CPU c holds {key * 1000 + c, key + c}.
void PutWide(int fd, uint64_t key) {
  std::vector<unsigned char> slots(16 * kCpus);
  for (int cpu = 0; cpu < kCpus; cpu++) {
    const Wide w{key * 1000 + cpu, static_cast<uint32_t>(key + cpu)};
    std::memcpy(slots.data() + 16 * cpu, &w, sizeof(w));
  }
  ASSERT_EQ(bpf_map_update_elem(fd, &key, slots.data(), BPF_ANY), 0) << strerror(errno);
}
Wide ExpectedWide(uint64_t key) {
  const uint64_t cpu_sum = static_cast<uint64_t>(kCpus) * (kCpus - 1) / 2;
  return {key * 1000 * kCpus + cpu_sum, static_cast<uint32_t>(key * kCpus + cpu_sum)};
}

// Checks every entry's sum, counts duplicates, and returns the keys read.
std::vector<uint64_t> CheckWide(const PerCpuEntries<uint64_t, Wide>& entries) {
  std::map<uint64_t, int> times;
  for (const auto& [key, sum] : entries) {
    times[key]++;
    EXPECT_EQ(sum.a, ExpectedWide(key).a) << "key " << key;
    EXPECT_EQ(sum.b, ExpectedWide(key).b) << "key " << key;
  }
  std::vector<uint64_t> keys;
  for (const auto& [key, n] : times) {
    EXPECT_EQ(n, 1) << "key " << key << " read " << n << " times";
    keys.push_back(key);
  }
  return keys;
}

std::vector<uint64_t> KeysFrom(uint64_t first, uint64_t count) {
  std::vector<uint64_t> keys;
  for (uint64_t k = first; k < first + count; k++) keys.push_back(k);
  return keys;
}

TEST(CgroupMapTest, BatchAndPerEntryGiveTheSameEntriesOverManyBatches) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  PerCpuMap map(sizeof(uint64_t), sizeof(Wide), 4096);
  ASSERT_GE(map.fd(), 0) << strerror(errno);
  for (uint64_t k = 1; k <= 1000; k++) PutWide(map.fd(), k);

  PerCpuEntries<uint64_t, Wide> small, standard;
  ASSERT_EQ((ReadPerCpuHashBatched<uint64_t, Wide>(map.fd(), AddWide, &small, 64)), 0)
      << "batch reads refused by this kernel";
  ASSERT_EQ((ReadPerCpuHashBatched<uint64_t, Wide>(map.fd(), AddWide, &standard)), 0);
  const auto walked = ReadPerCpuHashPerEntry<uint64_t, Wide>(map.fd(), AddWide);
  const auto chosen = ReadPerCpuHash<uint64_t, Wide>(map.fd(), AddWide);

  EXPECT_EQ(CheckWide(small), KeysFrom(1, 1000));
  EXPECT_EQ(CheckWide(standard), KeysFrom(1, 1000));
  EXPECT_EQ(CheckWide(walked), KeysFrom(1, 1000));
  EXPECT_EQ(CheckWide(chosen), KeysFrom(1, 1000));
}

// A per-CPU array's first `count` entries, each CPU's copy once, over more than one batch; the
// entries past `count` are not read.
TEST(CgroupMapTest, PerCpuArrayCopiesAreReadUpToTheCountAcrossBatches) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  constexpr uint32_t kEntries = 8192;
  const int fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "sw_array_test", sizeof(uint32_t),
                                sizeof(Wide), kEntries, nullptr);
  ASSERT_GE(fd, 0) << strerror(errno);
  for (uint32_t index = 0; index < kEntries; index++) {
    std::vector<unsigned char> slots(16 * kCpus);
    for (int cpu = 0; cpu < kCpus; cpu++) {
      const Wide w{index * 1000ull + cpu, index};
      std::memcpy(slots.data() + 16 * cpu, &w, sizeof(w));
    }
    ASSERT_EQ(bpf_map_update_elem(fd, &index, slots.data(), BPF_ANY), 0) << strerror(errno);
  }
  // More entries than one batch holds (64 KiB of values), fewer than the array.
  const uint32_t count = 65536 / (16 * kCpus) * 3 / 2 + 7;
  ASSERT_LT(count, kEntries);
  std::map<uint32_t, int> copies;
  ForEachPerCpuArrayCopy<Wide>(fd, count, [&](uint32_t index, int cpu, const Wide& copy) {
    EXPECT_EQ(copy.b, index);
    EXPECT_EQ(cpu, copies[index]) << "index " << index;
    EXPECT_EQ(copy.a, index * 1000ull + copies[index]) << "copy of CPU " << copies[index];
    copies[index]++;
  });
  close(fd);
  ASSERT_EQ(copies.size(), count);
  EXPECT_EQ(copies.rbegin()->first, count - 1);
  for (const auto& [index, n] : copies) EXPECT_EQ(n, kCpus) << "index " << index;
}

TEST(CgroupMapTest, EmptyMapReadsNoEntries) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  PerCpuMap map(sizeof(uint64_t), sizeof(Wide), 64);
  ASSERT_GE(map.fd(), 0) << strerror(errno);
  PerCpuEntries<uint64_t, Wide> read{{7, {}}};
  ASSERT_EQ((ReadPerCpuHashBatched<uint64_t, Wide>(map.fd(), AddWide, &read)), 0);
  EXPECT_TRUE(read.empty());
  EXPECT_TRUE((ReadPerCpuHashPerEntry<uint64_t, Wide>(map.fd(), AddWide).empty()));
}

// Buckets holding more entries than one batch has room for make the kernel refuse the batch
// (ENOSPC): the reader must grow its buffer rather than stop or skip them.
TEST(CgroupMapTest, OneEntryBatchesStillReadEveryEntry) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  PerCpuMap map(sizeof(uint64_t), sizeof(Wide), 16);
  ASSERT_GE(map.fd(), 0) << strerror(errno);
  for (uint64_t k = 1; k <= 16; k++) PutWide(map.fd(), k);
  PerCpuEntries<uint64_t, Wide> read;
  ASSERT_EQ((ReadPerCpuHashBatched<uint64_t, Wide>(map.fd(), AddWide, &read, 1)), 0);
  EXPECT_EQ(CheckWide(read), KeysFrom(1, 16));
}

TEST(CgroupMapTest, PairKeysWithCountsAsThePreemptionMapHasThem) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  PerCpuMap map(sizeof(Pair), sizeof(uint64_t), 1024);
  ASSERT_GE(map.fd(), 0) << strerror(errno);
  std::map<std::pair<uint64_t, uint64_t>, uint64_t> expected;
  for (uint64_t i = 0; i < 300; i++) {
    const Pair key{i, 1000 + i % 7};
    std::vector<uint64_t> per_cpu(kCpus);
    for (int cpu = 0; cpu < kCpus; cpu++) per_cpu[cpu] = i * 10 + cpu + 1;
    ASSERT_EQ(bpf_map_update_elem(map.fd(), &key, per_cpu.data(), BPF_ANY), 0);
    for (uint64_t v : per_cpu) expected[{key.first, key.second}] += v;
  }
  auto as_map = [](const PerCpuEntries<Pair, uint64_t>& entries) {
    std::map<std::pair<uint64_t, uint64_t>, uint64_t> out;
    for (const auto& [key, n] : entries) out[{key.first, key.second}] += n;
    EXPECT_EQ(out.size(), entries.size()) << "a pair was read twice";
    return out;
  };
  PerCpuEntries<Pair, uint64_t> batched;
  ASSERT_EQ((ReadPerCpuHashBatched<Pair, uint64_t>(map.fd(), AddCount, &batched, 50)), 0);
  EXPECT_EQ(as_map(batched), expected);
  EXPECT_EQ(as_map(ReadPerCpuHashPerEntry<Pair, uint64_t>(map.fd(), AddCount)), expected);
}

// While another thread deletes and re-adds the odd keys, every read still has each even key
// exactly once, nothing that was never in the map, and every sum right.
TEST(CgroupMapTest, EntriesDeletedDuringTheReadAreReadOnceOrNotAtAll) {
  STAGEWATCH_REQUIRE_PRIVILEGES();
  PerCpuMap map(sizeof(uint64_t), sizeof(Wide), 4096);
  ASSERT_GE(map.fd(), 0) << strerror(errno);
  constexpr uint64_t kKeys = 2000;
  for (uint64_t k = 0; k < kKeys; k++) PutWide(map.fd(), k);

  std::atomic<bool> stop{false};
  std::atomic<uint64_t> deletions{0};
  std::thread churn([&] {
    while (!stop.load()) {
      for (uint64_t k = 1; k < kKeys && !stop.load(); k += 2) {
        if (bpf_map_delete_elem(map.fd(), &k) == 0) deletions++;
        PutWide(map.fd(), k);
      }
    }
  });
  uint64_t odd_seen = 0, odd_missed = 0;
  for (int round = 0; round < 10; round++) {
    PerCpuEntries<uint64_t, Wide> batched;
    ASSERT_EQ((ReadPerCpuHashBatched<uint64_t, Wide>(map.fd(), AddWide, &batched, 128)), 0);
    for (const auto& read : {batched, ReadPerCpuHashPerEntry<uint64_t, Wide>(map.fd(), AddWide)}) {
      const std::vector<uint64_t> keys = CheckWide(read);
      uint64_t even = 0, odd = 0;
      for (uint64_t k : keys) {
        ASSERT_LT(k, kKeys) << "a key that was never in the map";
        (k % 2 ? odd : even)++;
      }
      EXPECT_EQ(even, kKeys / 2) << "an entry that stayed was missed";
      odd_seen += odd;
      odd_missed += kKeys / 2 - odd;
    }
  }
  stop = true;
  churn.join();
  EXPECT_GT(deletions.load(), 0u);
  std::printf("odd keys read %lu, missed while deleted %lu, deletions %lu\n", odd_seen,
              odd_missed, deletions.load());
}

}  // namespace
}  // namespace stagewatch

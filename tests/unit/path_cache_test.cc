#include "cgroup/path_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cgroup/layout.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

// Real directories (so inode numbers are real) under a fresh temporary root, and a clock the
// test moves by hand.
class PathCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/stagewatch-path-cache-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  uint64_t MakeDir(const std::string& rel) {
    std::error_code ec;
    std::filesystem::create_directories(root_ + rel, ec);
    EXPECT_FALSE(ec) << ec.message();
    std::optional<uint64_t> id = CgroupIdOfDirectory(root_ + rel);
    EXPECT_TRUE(id.has_value()) << rel;
    return id.value_or(0);
  }

  void RemoveDir(const std::string& rel) {
    std::error_code ec;
    std::filesystem::remove_all(root_ + rel, ec);
    ASSERT_FALSE(ec) << ec.message();
  }

  CgroupPathCacheOptions Options() {
    CgroupPathCacheOptions options;
    options.min_rescan_interval = absl::Milliseconds(200);
    options.negative_ttl = absl::Seconds(10);
    options.now = [this] { return now_; };
    return options;
  }

  std::string root_;
  absl::Time now_ = absl::FromUnixSeconds(1700000000);
};

TEST_F(PathCacheTest, MapsInodesToRelativePaths) {
  const uint64_t a = MakeDir("/a");
  const uint64_t b = MakeDir("/a/b");
  const uint64_t c = MakeDir("/c");
  CgroupPathCache cache(root_, Options());
  EXPECT_EQ(cache.Lookup(b), "/a/b");
  EXPECT_EQ(cache.Lookup(a), "/a");
  EXPECT_EQ(cache.Lookup(c), "/c");
  EXPECT_EQ(cache.Lookup(*CgroupIdOfDirectory(root_)), "/");
  CgroupPathCacheStats stats = cache.stats();
  EXPECT_EQ(stats.rescans, 1u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.hits, 3u);
  EXPECT_EQ(stats.unknown, 0u);
}

TEST_F(PathCacheTest, FilesAndSymlinksAreNotCgroups) {
  const uint64_t a = MakeDir("/a");
  const std::string file = root_ + "/a/cgroup.procs";
  std::ofstream(file) << "1\n";
  struct stat st;
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  MakeDir("/elsewhere/deep");
  ASSERT_EQ(symlink((root_ + "/elsewhere").c_str(), (root_ + "/a/link").c_str()), 0);

  CgroupPathCache cache(root_, Options());
  auto all = cache.RescanAll();
  std::sort(all.begin(), all.end(),
            [](const auto& x, const auto& y) { return x.second < y.second; });
  std::vector<std::string> paths;
  for (const auto& [id, path] : all) paths.push_back(path);
  EXPECT_EQ(paths, (std::vector<std::string>{"/", "/a", "/elsewhere", "/elsewhere/deep"}));
  EXPECT_EQ(cache.Lookup(a), "/a");
  EXPECT_EQ(cache.Lookup(static_cast<uint64_t>(st.st_ino)), std::nullopt);
}

TEST_F(PathCacheTest, NewCgroupFoundAfterRateLimitPasses) {
  MakeDir("/a");
  CgroupPathCache cache(root_, Options());
  cache.RescanAll();
  const uint64_t late = MakeDir("/late");

  now_ += absl::Milliseconds(50);  // too soon to walk again
  EXPECT_EQ(cache.Lookup(late), std::nullopt);
  EXPECT_EQ(cache.stats().rate_limited, 1u);
  EXPECT_EQ(cache.stats().rescans, 1u);

  // A rate-limited miss is not negative-cached, so it is found once a walk is allowed.
  now_ += absl::Milliseconds(200);
  EXPECT_EQ(cache.Lookup(late), "/late");
  CgroupPathCacheStats stats = cache.stats();
  EXPECT_EQ(stats.rescans, 2u);
  EXPECT_EQ(stats.negative_hits, 0u);
  EXPECT_EQ(stats.unknown, 1u);
  EXPECT_EQ(stats.misses, 2u);
}

TEST_F(PathCacheTest, UnknownIdIsNegativeCachedUntilTtl) {
  MakeDir("/a");
  CgroupPathCache cache(root_, Options());
  const uint64_t bogus = 0xdeadbeefcafeULL;
  EXPECT_EQ(cache.Lookup(bogus), std::nullopt);  // walks, still unknown → negative
  EXPECT_EQ(cache.stats().rescans, 1u);

  now_ += absl::Seconds(5);  // rate limit passed, but negative entry still valid
  EXPECT_EQ(cache.Lookup(bogus), std::nullopt);
  CgroupPathCacheStats stats = cache.stats();
  EXPECT_EQ(stats.rescans, 1u);
  EXPECT_EQ(stats.negative_hits, 1u);
  EXPECT_EQ(stats.rate_limited, 0u);

  now_ += absl::Seconds(6);  // expired: walks again
  EXPECT_EQ(cache.Lookup(bogus), std::nullopt);
  stats = cache.stats();
  EXPECT_EQ(stats.rescans, 2u);
  EXPECT_EQ(stats.negative_hits, 1u);
  EXPECT_EQ(stats.unknown, 3u);
  EXPECT_EQ(stats.misses, 3u);
}

TEST_F(PathCacheTest, RemovedCgroupDisappearsAfterRescan) {
  const uint64_t doomed = MakeDir("/doomed");
  const uint64_t keep = MakeDir("/keep");
  CgroupPathCache cache(root_, Options());
  EXPECT_EQ(cache.Lookup(doomed), "/doomed");
  RemoveDir("/doomed");
  // Cached until the next walk.
  EXPECT_EQ(cache.Lookup(doomed), "/doomed");
  auto all = cache.RescanAll();
  for (const auto& [id, path] : all) EXPECT_NE(path, "/doomed");
  EXPECT_EQ(all.size(), 2u);  // root and /keep
  EXPECT_EQ(cache.Lookup(keep), "/keep");
  now_ += absl::Seconds(1);
  EXPECT_EQ(cache.Lookup(doomed), std::nullopt);
}

TEST_F(PathCacheTest, RescanAllIgnoresRateLimit) {
  CgroupPathCache cache(root_, Options());
  cache.RescanAll();
  const uint64_t a = MakeDir("/a");
  auto all = cache.RescanAll();  // same instant
  EXPECT_EQ(all.size(), 2u);
  EXPECT_EQ(cache.stats().rescans, 2u);
  EXPECT_EQ(cache.Lookup(a), "/a");
}

TEST_F(PathCacheTest, TruncatesAtMaxEntriesAndCounts) {
  for (int i = 0; i < 10; ++i) MakeDir("/d" + std::to_string(i));
  CgroupPathCacheOptions options = Options();
  options.max_entries = 4;
  CgroupPathCache cache(root_, options);
  auto all = cache.RescanAll();
  EXPECT_EQ(all.size(), 4u);
  EXPECT_EQ(cache.stats().truncated, 7u);  // 11 directories including the root

  // The negative cache is bounded too: far more unknown ids than max_entries.
  for (uint64_t id = 1; id <= 50; ++id) {
    now_ += absl::Seconds(1);
    cache.Lookup(0xf000000000ULL + id);
  }
  // The last ones are still negative-cached: no walk for them within the TTL.
  const uint64_t rescans = cache.stats().rescans;
  EXPECT_EQ(cache.Lookup(0xf000000000ULL + 50), std::nullopt);
  EXPECT_EQ(cache.stats().rescans, rescans);
  EXPECT_EQ(cache.stats().negative_hits, 1u);
}

TEST_F(PathCacheTest, MissingRootYieldsNothing) {
  CgroupPathCache cache(root_ + "/absent", Options());
  EXPECT_TRUE(cache.RescanAll().empty());
  EXPECT_EQ(cache.Lookup(1), std::nullopt);
  EXPECT_EQ(cache.stats().unknown, 1u);
}

TEST_F(PathCacheTest, RootWithTrailingSlash) {
  const uint64_t a = MakeDir("/a/b");
  CgroupPathCache cache(root_ + "/", Options());
  EXPECT_EQ(cache.Lookup(a), "/a/b");
}

// Directories vanish while the walk runs (cgroups are removed concurrently): no crash, and
// the directories that stay are always found.
TEST_F(PathCacheTest, ToleratesDirectoriesVanishingMidWalk) {
  const uint64_t stable = MakeDir("/stable/inner");
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    for (int i = 0; !stop.load(); i = (i + 1) % 50) {
      std::error_code ec;
      std::filesystem::create_directories(root_ + "/churn/" + std::to_string(i) + "/x/y", ec);
      std::filesystem::remove_all(root_ + "/churn/" + std::to_string((i + 25) % 50), ec);
    }
  });
  CgroupPathCache cache(root_, Options());
  for (int i = 0; i < 200; ++i) {
    auto all = cache.RescanAll();
    bool found = false;
    for (const auto& [id, path] : all) found = found || (id == stable && path == "/stable/inner");
    ASSERT_TRUE(found) << "walk " << i;
  }
  stop = true;
  churn.join();
}

// On the real host hierarchy the cache finds the hierarchy root as "/".
TEST(PathCacheHostTest, FindsRootOfHostHierarchy) {
  auto layout = DetectHostCgroupLayout();
  if (!layout.ok()) GTEST_SKIP() << layout.status();
  std::optional<uint64_t> root_id = CgroupIdOfDirectory(layout->key_root);
  ASSERT_TRUE(root_id.has_value()) << layout->key_root;
  CgroupPathCache cache(layout->key_root);
  EXPECT_EQ(cache.Lookup(*root_id), "/");
  EXPECT_GE(cache.RescanAll().size(), 1u);
}

TEST(CgroupIdOfDirectoryTest, ReturnsInodeOfDirectoriesOnly) {
  struct stat st;
  ASSERT_EQ(stat("/tmp", &st), 0);
  EXPECT_EQ(CgroupIdOfDirectory("/tmp"), static_cast<uint64_t>(st.st_ino));
  EXPECT_EQ(CgroupIdOfDirectory("/nonexistent/dir"), std::nullopt);
  EXPECT_EQ(CgroupIdOfDirectory("/proc/self/status"), std::nullopt);
}

}  // namespace
}  // namespace stagewatch

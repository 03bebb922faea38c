#include "cgroup/path_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace stagewatch {
namespace {

struct WalkResult {
  bool root_ok = false;
  uint64_t truncated = 0;
};

// Depth-first walk of the directories below `root`. cgroups come and go while we walk, so a
// directory that vanishes (ENOENT) or cannot be opened is skipped rather than failing the walk.
// Symlinks are not followed. At most `max_entries` directories are stored in `out`; the rest
// are only counted. Only the directory being read is open, so wide trees cannot exhaust fds.
WalkResult WalkDirectories(const std::string& root, size_t max_entries,
                           absl::flat_hash_map<uint64_t, std::string>& out) {
  WalkResult result;
  const int root_fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root_fd < 0) return result;
  result.root_ok = true;
  std::vector<std::string> stack = {""};  // paths relative to the root: "" is the root itself

  while (!stack.empty()) {
    const std::string rel = std::move(stack.back());
    stack.pop_back();
    const int fd = rel.empty() ? dup(root_fd)
                               : openat(root_fd, rel.c_str() + 1,
                                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st;
    DIR* dir = fstat(fd, &st) == 0 ? fdopendir(fd) : nullptr;  // takes ownership of fd
    if (dir == nullptr) {
      close(fd);
      continue;
    }
    if (out.size() >= max_entries) {
      ++result.truncated;
    } else {
      out[static_cast<uint64_t>(st.st_ino)] = rel.empty() ? "/" : rel;
    }
    while (struct dirent* entry = readdir(dir)) {
      const char* name = entry->d_name;
      if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
      // cgroupfs fills d_type; where it is unknown, opening with O_DIRECTORY decides.
      if (entry->d_type != DT_DIR && entry->d_type != DT_UNKNOWN) continue;
      stack.push_back(absl::StrCat(rel, "/", name));
    }
    closedir(dir);
  }
  close(root_fd);
  return result;
}

}  // namespace

CgroupPathCache::CgroupPathCache(std::string hierarchy_root, CgroupPathCacheOptions options)
    : root_(std::move(hierarchy_root)), options_(std::move(options)) {}

bool CgroupPathCache::RescanLocked() {
  absl::flat_hash_map<uint64_t, std::string> fresh;
  WalkResult walk = WalkDirectories(root_, options_.max_entries, fresh);
  // Replace the whole map so that dead cgroups disappear.
  paths_ = std::move(fresh);
  last_rescan_ = options_.now();
  ++stats_.rescans;
  ++version_;
  stats_.truncated = walk.truncated;
  return walk.root_ok;
}

void CgroupPathCache::UseEvents(std::function<void()> drain) {
  drain_ = std::move(drain);
  absl::MutexLock lock(&mu_);
  events_ = true;
  negative_.clear();
  RescanLocked();
}

bool CgroupPathCache::uses_events() const {
  absl::MutexLock lock(&mu_);
  return events_;
}

void CgroupPathCache::ApplyQueued() {
  if (uses_events()) drain_();
  absl::MutexLock lock(&mu_);
  ExpireRemovedLocked(options_.now());
}

void CgroupPathCache::OnMkdir(uint64_t id, std::string path) {
  absl::MutexLock lock(&mu_);
  ++stats_.events;
  if (paths_.size() >= options_.max_entries && !paths_.contains(id)) {
    ++stats_.truncated;
    return;
  }
  paths_[id] = std::move(path);
  ++version_;
}

void CgroupPathCache::OnRmdir(uint64_t id, std::string path) {
  absl::MutexLock lock(&mu_);
  ++stats_.events;
  // The event's own path names it even when its mkdir was never seen.
  if (auto it = paths_.find(id); it != paths_.end()) {
    path = std::move(it->second);
    paths_.erase(it);
  }
  RecordRemovedLocked(id, std::move(path));
}

void CgroupPathCache::RecordRemovedLocked(uint64_t id, std::string path) {
  const absl::Time now = options_.now();
  removed_index_[id] = ++removals_;
  removed_.push_back({removals_, id, std::move(path), now});
  ExpireRemovedLocked(now);
  ++version_;
}

void CgroupPathCache::ExpireRemovedLocked(absl::Time now) {
  const size_t before = removed_.size();
  while (!removed_.empty() && (removed_.size() > kRemovedKept ||
                               now - removed_.front().removed_at >= options_.removed_kept_for)) {
    const RemovedCgroup& oldest = removed_.front();
    if (auto it = removed_index_.find(oldest.id);
        it != removed_index_.end() && it->second == oldest.sequence) {
      removed_index_.erase(it);
    }
    removed_.pop_front();
  }
  // A hash map keeps its slots when emptied: give them back once a churn has passed, and not
  // while it goes on (the index is then near its size, and rehashing each time would cost).
  if (removed_.size() < before && removed_index_.capacity() > 64 &&
      removed_index_.size() * 4 < removed_index_.capacity()) {
    removed_index_.rehash(0);
    if (removed_.empty()) removed_.shrink_to_fit();
  }
}

void CgroupPathCache::Resync() {
  absl::MutexLock lock(&mu_);
  absl::flat_hash_map<uint64_t, std::string> before = std::move(paths_);
  RescanLocked();
  for (auto& [id, path] : before) {
    if (!paths_.contains(id)) RecordRemovedLocked(id, std::move(path));
  }
}

std::optional<std::string> CgroupPathCache::FindLocked(uint64_t id) {
  if (auto it = paths_.find(id); it != paths_.end()) return it->second;
  if (auto it = removed_index_.find(id); it != removed_index_.end()) {
    return removed_[it->second - removed_.front().sequence].path;  // sequences are consecutive
  }
  return std::nullopt;
}

std::optional<std::string> CgroupPathCache::Lookup(uint64_t id) {
  absl::MutexLock lock(&mu_);
  if (std::optional<std::string> path = FindLocked(id)) {
    ++stats_.hits;
    return path;
  }
  ++stats_.misses;
  if (events_) {
    // The cgroup's mkdir was queued before anything could run in it: apply what is queued.
    mu_.Unlock();
    drain_();
    mu_.Lock();
    std::optional<std::string> path = FindLocked(id);
    if (!path) ++stats_.unknown;
    return path;
  }
  const absl::Time now = options_.now();
  if (auto it = negative_.find(id); it != negative_.end()) {
    if (now < it->second) {
      ++stats_.negative_hits;
      ++stats_.unknown;
      return std::nullopt;
    }
    negative_.erase(it);
  }
  if (now - last_rescan_ < options_.min_rescan_interval) {
    // Not negative-cached: the id may well appear at the next allowed rescan.
    ++stats_.rate_limited;
    ++stats_.unknown;
    return std::nullopt;
  }
  RescanLocked();
  if (auto it = paths_.find(id); it != paths_.end()) return it->second;

  if (negative_.size() >= options_.max_entries) {
    absl::erase_if(negative_, [now](const auto& entry) { return entry.second <= now; });
    if (negative_.size() >= options_.max_entries) negative_.clear();
  }
  if (options_.max_entries > 0) negative_[id] = now + options_.negative_ttl;
  ++stats_.unknown;
  return std::nullopt;
}

std::optional<std::string> CgroupPathCache::LookupNow(uint64_t id) {
  if (uses_events()) return Lookup(id);
  absl::MutexLock lock(&mu_);
  if (std::optional<std::string> path = FindLocked(id)) {
    ++stats_.hits;
    return path;
  }
  ++stats_.misses;
  RescanLocked();
  std::optional<std::string> path = FindLocked(id);
  if (path) {
    negative_.erase(id);
  } else {
    ++stats_.unknown;
  }
  return path;
}

std::vector<std::pair<uint64_t, std::string>> CgroupPathCache::Current() {
  if (uses_events()) {
    ApplyQueued();
    absl::MutexLock lock(&mu_);
    return {paths_.begin(), paths_.end()};
  }
  return RescanAll();
}

std::vector<std::pair<uint64_t, std::string>> CgroupPathCache::RescanAll() {
  absl::MutexLock lock(&mu_);
  RescanLocked();
  return {paths_.begin(), paths_.end()};
}

std::vector<RemovedCgroup> CgroupPathCache::RemovedSince(uint64_t* cursor) const {
  absl::MutexLock lock(&mu_);
  std::vector<RemovedCgroup> out;
  for (auto it = removed_.rbegin(); it != removed_.rend() && it->sequence > *cursor; ++it) {
    out.push_back(*it);
  }
  std::reverse(out.begin(), out.end());
  *cursor = removals_;
  return out;
}

uint64_t CgroupPathCache::version() const {
  absl::MutexLock lock(&mu_);
  return version_;
}

CgroupPathCacheStats CgroupPathCache::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

CgroupPathCacheHeld CgroupPathCache::held() const {
  absl::MutexLock lock(&mu_);
  return {removed_.size(), removed_index_.capacity()};
}

std::optional<uint64_t> CgroupIdOfDirectory(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(st.st_ino);
}

}  // namespace stagewatch

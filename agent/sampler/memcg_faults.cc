#include "sampler/memcg_faults.h"

#include <algorithm>
#include <string_view>

namespace stagewatch {
namespace {

// The nearest ancestor of `path` among the tops, 0 if none.
uint64_t EnclosingTop(std::string_view path,
                      const absl::flat_hash_map<std::string_view, uint64_t>& top_of_path) {
  while (path.size() > 1) {
    const size_t slash = path.rfind('/');
    path = slash == 0 ? std::string_view("/") : path.substr(0, slash);
    if (auto it = top_of_path.find(path); it != top_of_path.end()) return it->second;
  }
  return 0;
}

absl::flat_hash_map<std::string_view, uint64_t> TopOfPath(const std::vector<NamedCgroup>& tops) {
  absl::flat_hash_map<std::string_view, uint64_t> top_of_path;
  for (const NamedCgroup& t : tops) top_of_path[t.path] = t.id;
  return top_of_path;
}

}  // namespace

absl::flat_hash_set<uint64_t> NestedTops(const std::vector<NamedCgroup>& tops) {
  const absl::flat_hash_map<std::string_view, uint64_t> top_of_path = TopOfPath(tops);
  absl::flat_hash_set<uint64_t> nested;
  for (const NamedCgroup& t : tops) {
    if (const uint64_t enclosing = EnclosingTop(t.path, top_of_path); enclosing != 0) {
      nested.insert(t.id);
      nested.insert(enclosing);
    }
  }
  return nested;
}

void MemcgFaults::Update(const std::vector<TopFaultReading>& tops,
                         const absl::flat_hash_set<StageId>& known) {
  // Which tops enclose which changes only with the tops themselves.
  bool same_tops = tops.size() == tops_.size();
  for (size_t i = 0; same_tops && i < tops.size(); i++) same_tops = tops_.contains(tops[i].top.id);
  if (!same_tops) Retop(tops);

  for (const TopFaultReading& t : tops) {
    Top& top = tops_[t.top.id];
    if (t.pgfault && t.pgmajfault) {
      top.reading = {*t.pgfault, *t.pgmajfault};
      top.read = true;
    }
  }
  // Every top's reading first, then each one's own count: its nested tops' readings are needed.
  absl::flat_hash_map<uint64_t, Pair> nested;  // by top: its nested tops' readings, summed
  for (const auto& [id, top] : tops_) {
    if (top.enclosing == 0 || !top.read) continue;
    Pair& n = nested[top.enclosing];
    for (size_t i = 0; i < n.size(); i++) n[i] += top.reading[i];
  }

  std::vector<CgroupCounterSample>& samples = samples_;  // over the last sample's, in place
  size_t n = 0;
  uncovered_.clear();
  for (const TopFaultReading& t : tops) {
    Top& top = tops_[t.top.id];
    if (!top.read) {
      uncovered_.insert(t.top.stage.id);
      continue;
    }
    Pair others{};
    for (const auto* taken : {&nested, &departed_}) {
      if (auto it = taken->find(t.top.id); it != taken->end()) {
        for (size_t i = 0; i < others.size(); i++) others[i] += it->second[i];
      }
    }
    for (size_t i = 0; i < top.own.size(); i++) {
      const uint64_t own = top.reading[i] > others[i] ? top.reading[i] - others[i] : 0;
      top.own[i] = std::max(top.own[i], own);
    }
    if (n == samples.size()) samples.emplace_back();
    CgroupCounterSample& sample = samples[n++];
    sample.cgroup_id = t.top.id;
    sample.stage = t.top.stage.id;
    sample.values.assign(top.own.begin(), top.own.end());
  }
  samples.resize(n);
  counters_.Update(samples);
  counters_.KeepStages(known);
}

void MemcgFaults::Retop(const std::vector<TopFaultReading>& tops) {
  absl::flat_hash_map<std::string_view, uint64_t> top_of_path;
  absl::flat_hash_set<uint64_t> live;
  for (const TopFaultReading& t : tops) {
    top_of_path[t.top.path] = t.top.id;
    live.insert(t.top.id);
  }

  // Tops gone since the last sample. What a nested one had counted stays in its enclosing
  // top's hierarchical count: it is taken off there from now on.
  std::vector<uint64_t> gone;
  for (const auto& [id, top] : tops_) {
    if (!live.contains(id)) gone.push_back(id);
  }
  for (uint64_t id : gone) {
    const Top& top = tops_[id];
    if (top.enclosing != 0 && top.read && live.contains(top.enclosing)) {
      Pair& d = departed_[top.enclosing];
      for (size_t i = 0; i < d.size(); i++) d[i] += top.reading[i];
    }
    departed_.erase(id);
  }
  for (uint64_t id : gone) tops_.erase(id);
  for (const TopFaultReading& t : tops) {
    tops_[t.top.id].enclosing = EnclosingTop(t.top.path, top_of_path);
  }
}

StageMap<StageFaults> MemcgFaults::Totals() const {
  StageMap<StageFaults> out;
  counters_.ForEachTotal([&out](StageId stage, absl::Span<const uint64_t> v) {
    // pgfault counts every fault, minor and major.
    out.emplace_hint(out.end(), stage,
                     StageFaults{.minor = v[0] > v[1] ? v[0] - v[1] : 0, .major = v[1]});
  });
  return out;
}

}  // namespace stagewatch

#include "sampler/memory_sampler.h"

#include <algorithm>
#include <atomic>
#include <iterator>

#include "cgroup/limit_files.h"
#include "cgroup/memcg_counters.h"
#include "thread_name.h"

namespace stagewatch {

namespace {

// The limit files ReadMemoryLimit reads, watched where the limits are read from cgroupfs.
std::unique_ptr<LimitWatch> LimitWatchFor(const SampleReader& reader, const CgroupLayout& layout) {
  if (reader.limit) return nullptr;
  const bool v2 = layout.key == CGROUP_KEY_DEFAULT;
  const LimitFiles& files = LimitFilesOf(v2);
  return std::make_unique<LimitWatch>(
      v2 ? std::vector<std::string>{files.memory_max, files.memory_high}
         : std::vector<std::string>{files.memory_max});
}

absl::StatusOr<std::shared_ptr<const NumaTopology>> TopologyFor(unsigned parts) {
  if (!(parts & kPlacementPart)) return nullptr;
  absl::StatusOr<NumaTopology> topology = ReadNumaTopology();
  if (!topology.ok()) return topology.status();
  return std::make_shared<const NumaTopology>(*std::move(topology));
}

// The fields `reader` leaves empty read cgroupfs, the tops' files through `files`; a cpuset
// read where no cgroup has one is `topology`'s whole host.
SampleReader WithCgroupfs(SampleReader reader, const CgroupLayout& layout,
                          OpenCgroupFiles* files,
                          const absl::StatusOr<std::shared_ptr<const NumaTopology>>& topology,
                          CpusetTexts* cpuset_texts) {
  if (!reader.stats) {
    reader.stats = [layout, files](const NamedCgroup& c) {
      return ReadMemoryStats(layout, c.path,
                             [&](const std::string& file) { return files->Read(c.id, file); });
    };
    if (!reader.usage) {
      reader.usage = [layout, files](const NamedCgroup& c) {
        return ReadMemoryUsage(layout, c.path,
                               [&](const std::string& file) { return files->Read(c.id, file); });
      };
    }
  }
  if (!reader.limit) {
    reader.limit = [layout](const std::string& path) { return ReadMemoryLimit(layout, path); };
  }
  if (!reader.pressure) {
    reader.pressure = [layout, files](const NamedCgroup& top, std::string_view resource) {
      return ReadPsi(layout, top.path, resource,
                     [&](const std::string& file) { return files->Read(top.id, file); });
    };
  }
  if (!reader.cpu) {
    reader.cpu = [layout, files](const NamedCgroup& top) {
      return ReadCpuStats(layout, top.path,
                          [&](const std::string& file) { return files->Read(top.id, file); });
    };
    if (!reader.cpu_time && layout.key != CGROUP_KEY_DEFAULT) {
      reader.cpu_time = [layout, files](const NamedCgroup& top) {
        return ReadCpuacctUsage(layout, top.path,
                                [&](const std::string& file) { return files->Read(top.id, file); });
      };
    }
  }
  if (!reader.oom_kills) {
    reader.oom_kills = [layout](const NamedCgroup& c) {
      return ReadOomKillCount(layout.key_root + c.path, layout.key);
    };
  }
  if (!reader.numa) {
    reader.numa = [layout, files](const NamedCgroup& top) {
      return ReadNumaStat(layout, top.path,
                          [&](const std::string& file) { return files->Read(top.id, file); });
    };
  }
  if (!reader.cpuset) {
    std::shared_ptr<const NumaTopology> host =
        topology.ok() && *topology ? *topology : std::make_shared<const NumaTopology>();
    reader.cpuset = [layout, files, host, cpuset_texts](const NamedCgroup& top) {
      return ReadEffectiveCpuset(layout, top.path, *host, [&](const std::string& file) {
        auto [text, fresh] = cpuset_texts->try_emplace(file, absl::UnknownError("unread"));
        if (fresh) text->second = files->Read(top.id, file);
        return text->second;
      });
    };
  }
  return reader;
}

}  // namespace

MemorySampler::MemorySampler(CgroupNamer* namer, CgroupLayout layout, MemoryConfig config,
                             SampleReader reader, unsigned parts)
    : namer_(namer),
      layout_(std::move(layout)),
      config_(config),
      parts_(parts | kMemoryPart),
      topology_(TopologyFor(parts_)),
      limit_watch_(LimitWatchFor(reader, layout_)),
      reader_(WithCgroupfs(std::move(reader), layout_, &files_, topology_, &cpuset_texts_)),
      events_(kMemoryEvents.size()),
      pressure_(4),
      cpu_(6),
      latest_(std::make_shared<Snapshot>()) {}  // not const: a spare is written over

MemorySampler::~MemorySampler() {
  {
    absl::MutexLock lock(&wake_mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void MemorySampler::Start(Observer observer) {
  observer_ = std::move(observer);
  thread_ = std::thread([this] {
    NameThisThread("sw-sampler");
    absl::Time due = absl::InfinitePast();
    do {
      const absl::Time now = absl::Now();
      if (now < due) {  // woken by a kill
        ReadVictims(now);
        continue;
      }
      SampleOnce(now);
      if (observer_) observer_(now, *Latest());
      due = absl::Now() + config_.sample_interval;
    } while (Wait(due));
  });
}

bool MemorySampler::Wait(absl::Time due) {
  absl::MutexLock lock(&wake_mu_);
  auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(wake_mu_) {
    return stopping_ || !victims_.empty();
  };
  wake_mu_.AwaitWithDeadline(absl::Condition(&woken), due);
  return !stopping_;
}

void MemorySampler::OnOomKill(absl::Time at, uint64_t victim) {
  last_oom_kill_ns_ = absl::ToUnixNanos(at);
  if (!(parts_ & kOomPart)) return;
  absl::MutexLock lock(&wake_mu_);
  victims_.push_back(victim);
}

const std::vector<NamedCgroup>& MemorySampler::Tops(
    const std::shared_ptr<const std::vector<NamedCgroup>>& live) {
  if (live == tops_live_) return tops_;
  tops_ = namer_->StageTops();
  tops_live_ = live;
  top_ids_.clear();
  for (const NamedCgroup& top : tops_) top_ids_.insert(top.id);
  // Nested tops are read in full, shallower first (sampler/memcg_faults.h).
  nested_tops_ = config_.fault_source == PageFaultSource::kBpf ? absl::flat_hash_set<uint64_t>{}
                                                               : NestedTops(tops_);
  tops_by_depth_.clear();
  for (const NamedCgroup& top : tops_) tops_by_depth_.push_back(&top);
  if (tasks_ran_) {
    live_by_id_.clear();
    for (const NamedCgroup& c : *live) live_by_id_[c.id] = &c;
    top_by_path_.clear();
    for (const NamedCgroup& top : tops_) top_by_path_[top.path] = top.id;
  }
  if (!nested_tops_.empty()) {
    std::stable_sort(tops_by_depth_.begin(), tops_by_depth_.end(), [](const auto* a, const auto* b) {
      return std::count(a->path.begin(), a->path.end(), '/') <
             std::count(b->path.begin(), b->path.end(), '/');
    });
  }
  return tops_;
}

void MemorySampler::FindLimited(const std::shared_ptr<const std::vector<NamedCgroup>>& live,
                                const absl::flat_hash_set<uint64_t>& tops) {
  // The first sample checks every cgroup; after it, a cgroup not seen before is new. A new one
  // is watched before its first check: what is written after that check is told.
  const bool first = samples_ == 0;
  if (live != seen_list_) {
    absl::flat_hash_map<uint64_t, const NamedCgroup*> alive;
    alive.reserve(live->size());
    for (const NamedCgroup& c : *live) {
      alive[c.id] = &c;
      if (seen_.contains(c.id)) continue;
      const bool watched =
          limit_watch_ && limit_watch_->Add(c.id, ControllerDir(layout_, "memory", c.path));
      if (!watched) unwatched_.insert(c.id);
      if (!first) new_checks_[c.id] = watched ? 1 : kNewCgroupChecks;
    }
    auto gone = [&alive](uint64_t id) { return !alive.contains(id); };
    if (limit_watch_) {
      for (const auto& [id, c] : seen_) {
        if (gone(id)) limit_watch_->Remove(id);
      }
    }
    absl::erase_if(limited_, gone);
    absl::erase_if(new_checks_, [&gone](const auto& e) { return gone(e.first); });
    absl::erase_if(no_psi_, gone);
    absl::erase_if(unwatched_, gone);
    seen_ = std::move(alive);
    seen_list_ = live;
  }
  written_ = limit_watch_ ? limit_watch_->Take() : LimitWatch::Written{};
  // Due: the cgroups checked every sample at first or after an overflow, else those whose
  // limit was written, the new ones, and this sample's share of the unwatched (not a pass over
  // every live cgroup: at 10,000 nearly none is due).
  std::vector<uint64_t>& due = due_limit_checks_;
  due.clear();
  if (first || written_.all) {
    for (const NamedCgroup& c : *live) due.push_back(c.id);
  } else {
    due.insert(due.end(), written_.ids.begin(), written_.ids.end());
    for (uint64_t id : unwatched_) {
      if (InRound(id)) due.push_back(id);
    }
  }
  for (auto it = new_checks_.begin(); it != new_checks_.end();) {
    due.push_back(it->first);
    if (--it->second == 0) {
      new_checks_.erase(it++);
    } else {
      ++it;
    }
  }
  std::sort(due.begin(), due.end());
  due.erase(std::unique(due.begin(), due.end()), due.end());
  for (uint64_t id : due) {
    auto found = seen_.find(id);
    if (found == seen_.end()) continue;  // a written limit of a cgroup gone since
    const NamedCgroup& c = *found->second;
    // A domain's limit comes with its stats, every sample; unattributed cgroups are no stage's.
    if (c.stage.id == kUnattributedStageId || tops.contains(c.id) || limited_.contains(c.id)) {
      continue;
    }
    absl::StatusOr<std::optional<uint64_t>> limit = reader_.limit(c.path);
    if (!limit.ok()) {
      skips_++;
      continue;
    }
    if (limit->has_value()) limited_.insert(c.id);
  }
}

// The stage tops first (always tracked: their hierarchical usage is the stage's), then every
// other cgroup of a stage known to have a limit of its own, up to memory.max_limit_domains.
void MemorySampler::ReadDomains(const std::shared_ptr<const std::vector<NamedCgroup>>& live,
                                const std::vector<NamedCgroup>& tops) {
  const absl::flat_hash_set<uint64_t>& top_ids = top_ids_;
  FindLimited(live, top_ids);

  std::vector<Domain>& domains = domains_;
  domains.clear();
  for (const NamedCgroup* top : tops_by_depth_) {
    const bool full = nested_tops_.contains(top->id) || Written(top->id);
    const TopReading& r = top_readings_[top->id];
    domains.push_back(ReadDomain(*top, true, full, !full && r.still,
                                 r.quiet ? kQuietFullReadEvery : kFullReadEvery));
  }
  // Oldest cgroup (lowest id) first, so that past the bound the same ones stay watched.
  // limited_ holds live cgroups only (FindLimited forgets the others).
  std::vector<const NamedCgroup*> limited;
  for (uint64_t id : limited_) {
    auto c = seen_.find(id);
    if (c != seen_.end() && !top_ids.contains(id)) limited.push_back(c->second);
  }
  std::sort(limited.begin(), limited.end(),
            [](const NamedCgroup* a, const NamedCgroup* b) { return a->id < b->id; });
  const size_t max = static_cast<size_t>(config_.max_limit_domains);
  size_t room = max > tops.size() ? max - tops.size() : 0;
  for (const NamedCgroup* c : limited) {
    if (room == 0) {
      overflows_++;
      continue;
    }
    room--;
    Domain d = ReadDomain(*c, false, Written(c->id), false);
    if (d.stats && !d.limit) {
      limited_.erase(c->id);  // its limit was lifted: no longer a domain
      continue;
    }
    domains.push_back(std::move(d));
  }
}

MemorySampler::Domain MemorySampler::ReadDomain(const NamedCgroup& c, bool top, bool full,
                                                bool still, uint64_t full_read_every) {
  Domain d{.cgroup = &c, .top = top};
  auto last = full_reads_.find(c.id);
  auto keep_last = [&] {
    d.stats = last->second.stats;
    d.limit = LowerLimit(d.stats->limit_bytes, d.stats->high_bytes);
    return d;
  };
  if (still && last != full_reads_.end()) return keep_last();
  if (!full && reader_.usage && last != full_reads_.end() &&
      samples_ - last->second.sample < full_read_every) {
    if (absl::StatusOr<uint64_t> usage = reader_.usage(c);
        usage.ok() && *usage == last->second.stats->usage_bytes) {
      return keep_last();
    }
  }
  if (absl::StatusOr<MemoryCgroupStats> m = reader_.stats(c); m.ok()) {
    d.limit = LowerLimit(m->limit_bytes, m->high_bytes);
    d.stats = std::make_shared<const MemoryCgroupStats>(*std::move(m));
    full_reads_[c.id] = {.stats = d.stats, .sample = samples_};
  } else {
    // Removed since the refresh, or a file that does not parse: this domain sits the sample
    // out, the others go on.
    full_reads_.erase(c.id);
    skips_++;
  }
  return d;
}

// A top without PSI (on a hybrid host, a path only the v1 hierarchies have) counts zero,
// asked again on the slower round. A file that exists but could not be read keeps the top's
// last totals: zeros would be taken for a restart, and what it had counted added again at its
// next read.
MemorySampler::TopPressure MemorySampler::ReadTopPressure(const NamedCgroup& top,
                                                          const TopPressure& last) {
  TopPressure p;
  if (no_psi_.contains(top.id) && !InRound(top.id)) return p;
  absl::StatusOr<PsiTotals> m = reader_.pressure(top, "memory");
  if (absl::IsNotFound(m.status())) no_psi_.insert(top.id);
  if (!m.ok()) return absl::IsNotFound(m.status()) ? p : last;
  no_psi_.erase(top.id);
  p.has_psi = true;
  p.memory = *m;
  auto or_last = [](const absl::StatusOr<PsiTotals>& read, const PsiTotals& kept) {
    if (read.ok()) return *read;
    return absl::IsNotFound(read.status()) ? PsiTotals{} : kept;
  };
  p.io = or_last(reader_.pressure(top, "io"), last.io);
  if (parts_ & kCpuPart) p.cpu = or_last(reader_.pressure(top, "cpu"), last.cpu);
  return p;
}

void MemorySampler::FindTopsThatRan() {
  ran_tops_.clear();
  ran_known_ = false;
  if (!tasks_ran_) return;
  const std::optional<std::vector<uint64_t>> ran = tasks_ran_();
  if (!ran) return;
  for (uint64_t id : *ran) {
    auto c = live_by_id_.find(id);
    if (c == live_by_id_.end()) return;  // born since the refresh, or gone: could be anywhere
    // The cgroup and each ancestor (paths start at "/", the root).
    std::string_view path = c->second->path;
    for (;;) {
      if (auto top = top_by_path_.find(path); top != top_by_path_.end()) {
        ran_tops_.insert(top->second);
      }
      const size_t slash = path.rfind('/');
      if (slash == std::string_view::npos || path.size() <= 1) break;
      path = path.substr(0, std::max<size_t>(slash, 1));
    }
  }
  ran_known_ = true;
}

void MemorySampler::ReadTopsCpu(const std::vector<NamedCgroup>& tops, Snapshot* next) {
  // Updated in place, not rebuilt: a map of every top allocated each sample costs more than
  // the reads of a still one.
  if (top_readings_.size() > tops.size()) {
    absl::erase_if(top_readings_, [this](const auto& e) { return !top_ids_.contains(e.first); });
  }
  for (const NamedCgroup& top : tops) {
    TopReading& r = top_readings_[top.id];
    const std::optional<uint64_t> last_time = r.cpu.usage_ns;
    // It has readings to keep, and this is not its turn of the round.
    const bool off_round = r.sampled && full_reads_.contains(top.id) &&
                           (top.id + samples_) % kFullReadEvery != 0;
    // By the sched probe, where it can tell (keyed by the memory cgroup on v1).
    const bool ran_here = ran_known_ && ran_tops_.contains(top.id);
    const bool none_ran = ran_known_ && !ran_here;
    // v1 with a CPU hierarchy of its own: its time is read even if no task ran in the memory
    // cgroup, as a task may be in one and not the other.
    const bool own_cpu_time = (parts_ & kCpuPart) && reader_.cpu_time && last_time;
    r.still = off_round && none_ran && !own_cpu_time;
    r.quiet = none_ran;
    if (r.still || !(parts_ & kCpuPart)) continue;
    const bool may_stay = off_round && last_time && !ran_here;
    if (may_stay && reader_.cpu_time) {  // v1: cpuacct.usage alone, before cpu.stat
      absl::StatusOr<uint64_t> time = reader_.cpu_time(top);
      r.still = time.ok() && *time == *last_time;
      r.quiet |= r.still;
      if (r.still) continue;
    }
    absl::StatusOr<CpuCgroupStats> stat = reader_.cpu(top);
    const bool unreadable = !stat.ok() && !absl::IsNotFound(stat.status());
    if (unreadable && next->cpu_error.ok()) next->cpu_error = stat.status();
    // One that exists keeps its last reading, as its pressure does (ReadTopPressure).
    if (!unreadable) r.cpu = stat.value_or(CpuCgroupStats{});
    r.still = may_stay && r.cpu.usage_ns == last_time;
    r.quiet |= last_time && !ran_here && r.cpu.usage_ns == last_time;
  }
}

StageMap<std::optional<double>> MemorySampler::ReadTops(const std::vector<NamedCgroup>& tops,
                                                        Snapshot* next) {
  StageMap<std::optional<double>> memory_full;
  // Assigned over the last sample's, in place: no allocation per top.
  std::vector<CgroupCounterSample>& pressure = top_pressure_samples_;
  std::vector<CgroupCounterSample>& cpu = top_cpu_samples_;
  // While the tops are the same, a still top's readings are its last ones: only the others are
  // folded again, not every top each sample.
  const bool same_tops = counted_tops_ == tops_live_;
  counted_tops_ = tops_live_;
  if (!same_tops) {
    pressure.resize(tops.size());
    cpu.resize(parts_ & kCpuPart ? tops.size() : 0);
  }
  size_t i = 0;
  for (const NamedCgroup& top : tops) {
    TopReading& r = top_readings_[top.id];
    if (!r.still) r.pressure = ReadTopPressure(top, r.pressure);
    r.sampled = true;
    const TopPressure& p = r.pressure;
    if (p.has_psi) {
      memory_full[top.stage.id] =
          memory_full[top.stage.id].value_or(0) + p.memory.full_us.value_or(0) * 1e-6;
    }
    if (same_tops && r.still) continue;
    const PsiTotals &mem = p.memory, &io = p.io, &cpu_psi = p.cpu;
    CgroupCounterSample& psi = pressure[i];
    psi.cgroup_id = top.id;
    psi.stage = top.stage.id;
    psi.values.assign({mem.some_us, mem.full_us.value_or(0), io.some_us, io.full_us.value_or(0)});
    if (parts_ & kCpuPart) {
      const CpuCgroupStats& c = r.cpu;
      CgroupCounterSample& time = cpu[i];
      time.cgroup_id = top.id;
      time.stage = top.stage.id;
      time.values.assign({c.usage_ns.value_or(0), c.nr_periods.value_or(0),
                          c.nr_throttled.value_or(0), c.throttled_ns.value_or(0),
                          cpu_psi.some_us, cpu_psi.full_us.value_or(0)});
    }
    i++;
  }
  auto update = [&](StageCounters& counters, const std::vector<CgroupCounterSample>& samples) {
    const absl::Span<const CgroupCounterSample> taken(samples.data(), i);
    if (same_tops) {
      counters.UpdateChanged(taken, {});
    } else {
      counters.Update(taken);
    }
    if (stages_changed_) counters.KeepStages(*known_);
  };
  update(pressure_, pressure);
  pressure_.ForEachTotal([next](StageId id, absl::Span<const uint64_t> v) {
    next->pressure.emplace_hint(next->pressure.end(), id,
                                StagePressure{.memory_some_us = v[0], .memory_full_us = v[1],
                                              .io_some_us = v[2], .io_full_us = v[3]});
  });
  if (parts_ & kCpuPart) {
    update(cpu_, cpu);
    cpu_.ForEachTotal([next](StageId id, absl::Span<const uint64_t> v) {
      next->cpu.emplace_hint(next->cpu.end(), id,
                             StageCpu{.usage_ns = v[0], .periods = v[1], .throttled_periods = v[2],
                                      .throttled_ns = v[3], .pressure_some_us = v[4],
                                      .pressure_full_us = v[5]});
    });
  }
  return memory_full;
}

void MemorySampler::SampleOnce(absl::Time now) {
  namer_->Refresh();
  const std::shared_ptr<const std::vector<NamedCgroup>> live = namer_->Live();
  const std::vector<NamedCgroup>& tops = Tops(live);
  // The per-stage state drops forgotten stages only in a sample whose known stages changed (the
  // refresh above forgets them): a pass over every stage, not needed in the others.
  std::shared_ptr<const StageResolver::StageIds> known = namer_->stages()->KnownStageIds();
  stages_changed_ = known != known_;
  known_ = std::move(known);  // held: a new set cannot take the old one's address
  std::shared_ptr<Snapshot> next = FreshSnapshot();
  next->taken = now;
  FindTopsThatRan();
  if (!ran_known_ || !ran_tops_.empty()) samples_a_stage_ran_++;
  next->samples_a_stage_ran = samples_a_stage_ran_;
  ReadTopsCpu(tops, next.get());  // first: which tops are still
  ReadDomains(live, tops);
  const std::vector<Domain>& domains = domains_;
  const StageMap<std::optional<double>> psi = ReadTops(tops, next.get());
  // Every top is a domain. The files and full reads of a removed top or a domain no more go,
  // looked for only when the domains changed.
  bool same_domains = domains.size() == domain_ids_.size();
  for (size_t i = 0; same_domains && i < domains.size(); i++) {
    same_domains = domain_ids_.contains(domains[i].cgroup->id);
  }
  if (!same_domains) {
    domain_ids_.clear();
    for (const Domain& d : domains) domain_ids_.insert(d.cgroup->id);
    files_.Retain(domain_ids_);
  }
  if (parts_ & kPlacementPart) ReadPlacement(tops, next.get());  // before the full reads go
  if (!same_domains) {
    absl::erase_if(full_reads_, [this](const auto& e) { return !domain_ids_.contains(e.first); });
  }
  if (parts_ & kOomPart) {
    ReadOomKills(now, *live);
    next->oom_kills = oom_kills_;
    next->oom_kills_read = oom_kills_read_;
  }
  samples_++;
  Fold(now, domains);
  if (config_.fault_source != PageFaultSource::kBpf) {
    // Assigned over the last sample's, whose strings keep their room: no allocation per top.
    std::vector<TopFaultReading>& readings = fault_readings_;
    size_t n = 0;
    for (const Domain& d : domains) {
      if (!d.top) continue;
      if (n == readings.size()) readings.emplace_back();
      TopFaultReading& r = readings[n++];
      r.top = *d.cgroup;
      r.pgfault = d.stats ? d.stats->pgfault : std::nullopt;
      r.pgmajfault = d.stats ? d.stats->pgmajfault : std::nullopt;
    }
    readings.resize(n);
    memcg_faults_.Update(readings, *known_);
    next->faults = memcg_faults_.Totals();
    next->faults_uncovered = memcg_faults_.uncovered();
  }
  for (auto& [stage, m] : stages_) {
    auto it = psi.find(stage);
    m.psi_full_seconds = it == psi.end() ? std::nullopt : it->second;
  }
  CopyStages(next->memory);
  domains_.clear();  // its cgroups are this sample's; its room stays for the next
  Publish(std::move(next));
}

void MemorySampler::Publish(std::shared_ptr<const Snapshot> next) {
  {
    absl::MutexLock lock(&mu_);
    std::swap(latest_, next);
  }
  // The last one, held by no other thread (they hold a snapshot only while they read it), is
  // the next sample's to write over: its stages' domains and events keep their room. Only the
  // sampler's thread made it (never const), and only latest_ hands it out: no other thread can
  // take it again once it is the only holder here. Else it goes with its last holder.
  if (next.use_count() == 1) {
    // Orders the last holder's reads (its release of the count) before the writes over it.
    std::atomic_thread_fence(std::memory_order_acquire);
    spare_ = std::const_pointer_cast<Snapshot>(std::move(next));
  } else {
    next.reset();
  }
}

std::shared_ptr<Snapshot> MemorySampler::FreshSnapshot() {
  if (!spare_) return std::make_shared<Snapshot>();
  std::shared_ptr<Snapshot> next = std::move(spare_);
  StageMap<StageMemory> memory = std::move(next->memory);
  *next = Snapshot{};
  next->memory = std::move(memory);
  return next;
}

void MemorySampler::CopyStages(StageMap<StageMemory>& into) const {
  const bool same_stages =
      into.size() == stages_.size() &&
      std::equal(into.begin(), into.end(), stages_.begin(),
                 [](const auto& a, const auto& b) { return a.first == b.first; });
  if (!same_stages) {
    into = stages_;
    return;
  }
  auto to = into.begin();
  for (const auto& [id, m] : stages_) (to++)->second = m;  // into the strings' and vectors' room
}

void MemorySampler::ReadPlacement(const std::vector<NamedCgroup>& tops, Snapshot* next) {
  if (topology_.ok()) {
    next->numa_topology = *topology_;
  } else {
    next->placement_error = topology_.status();
  }
  const bool same_tops = placement_tops_ == tops_live_;
  placement_tops_ = tops_live_;
  if (placements_.size() > tops.size()) {  // a removed top's readings go with it
    absl::erase_if(placements_, [this](const auto& e) { return !top_ids_.contains(e.first); });
  }
  // Stages a top of which was read again: only theirs are summed again, the others' shared
  // with the last snapshot (a tenth or less of the stages in a sample).
  std::vector<StageId>& changed = placement_changed_;
  changed.clear();
  cpuset_texts_.clear();
  for (const NamedCgroup& top : tops) {
    TopPlacement& p = placements_[top.id];
    const bool unread = !p.numa;
    // With its memory.stat, which ReadDomains read in full this sample or kept.
    auto full = full_reads_.find(top.id);
    if (!p.numa || (full != full_reads_.end() && full->second.sample == samples_)) {
      p.numa = reader_.numa(top);
      changed.push_back(top.stage.id);
    }
    if (unread || (top.id + samples_) % kFullReadEvery == 0) {
      p.cpuset = reader_.cpuset(top);
      changed.push_back(top.stage.id);
    }
    if (!p.numa->ok() && next->placement_error.ok()) next->placement_error = p.numa->status();
    if (!p.cpuset->ok() && next->placement_error.ok()) next->placement_error = p.cpuset->status();
  }
  std::sort(changed.begin(), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  auto again = [&](StageId stage) {
    return !same_tops || std::binary_search(changed.begin(), changed.end(), stage);
  };
  if (!same_tops) placement_.clear();  // a stage whose tops all went goes too
  StageMap<StagePlacement> summed;
  for (const NamedCgroup& top : tops) {
    if (!again(top.stage.id)) continue;
    const TopPlacement& p = placements_[top.id];
    StagePlacement& stage = summed[top.stage.id];
    if (p.numa->ok()) {
      if (!stage.numa) stage.numa.emplace();
      for (const auto& [node, m] : **p.numa) {
        (*stage.numa)[node].anon_bytes += m.anon_bytes;
        (*stage.numa)[node].file_bytes += m.file_bytes;
      }
    }
    if (p.cpuset->ok()) {
      auto join = [](std::optional<std::vector<int>>& into, const std::vector<int>& ids) {
        if (!into) into.emplace();
        into->insert(into->end(), ids.begin(), ids.end());
        std::sort(into->begin(), into->end());
        into->erase(std::unique(into->begin(), into->end()), into->end());
      };
      join(stage.cpus, (*p.cpuset)->cpus);
      join(stage.mems, (*p.cpuset)->mems);
    }
  }
  for (auto& [stage, sum] : summed) {
    placement_[stage] = std::make_shared<const StagePlacement>(std::move(sum));
  }
  next->placement = placement_;
}

struct MemorySampler::StageSum {
  uint64_t usage = 0, working_set = 0, swap = 0, kernel_peak = 0;
  bool has_swap = false, near = false;
  int tops = 0;
  size_t read = 0;
  const Domain* closest = nullptr;  // highest usage / limit
  double closest_fraction = -1;
};

void MemorySampler::Fold(absl::Time now, const std::vector<Domain>& domains) {
  // The domains by stage, through a list whose room is kept: each stage's are written over its
  // last sample's in place (their strings and vectors keep their room), no allocation a stage.
  std::vector<std::pair<StageId, size_t>>& by_stage = domains_by_stage_;
  by_stage.clear();
  for (size_t i = 0; i < domains.size(); i++) by_stage.emplace_back(domains[i].cgroup->stage.id, i);
  std::sort(by_stage.begin(), by_stage.end());
  std::vector<CgroupCounterSample>& event_samples = event_samples_;
  size_t events_taken = 0;
  // The cgroups whose events count, read or not: one not read this sample keeps its last counts
  // (retired and counted again from zero, what it had counted would be added twice); only one
  // no longer among them is retired.
  std::vector<uint64_t>& event_cgroups = event_cgroups_next_;
  event_cgroups.clear();
  // v2 memory.events are hierarchical: the tops' count each event once. v1 keeps failcnt and
  // oom_kill per cgroup: every domain's own count is added.
  const bool hierarchical_events = layout_.key == CGROUP_KEY_DEFAULT;
  if (stages_changed_) {
    // A forgotten stage's peak and near-limit time start again if it comes back.
    absl::erase_if(stages_, [this](const auto& entry) { return !known_->contains(entry.first); });
  }
  auto stage = stages_.begin();  // walked beside by_stage, both in stage order
  for (size_t begin = 0, end = 0; begin < by_stage.size(); begin = end) {
    const StageId id = by_stage[begin].first;
    for (end = begin; end < by_stage.size() && by_stage[end].first == id;) end++;
    for (; stage != stages_.end() && stage->first < id; ++stage) {
      stage->second.domains.clear();  // no cgroup left: its domains are gone
    }
    const bool known = stage != stages_.end() && stage->first == id;
    if (!known) stage = stages_.try_emplace(stage, id);
    StageMemory& m = stage->second;
    StageSum s;
    m.domains.resize(end - begin);
    for (size_t k = begin; k < end; k++) {
      const Domain& d = domains[by_stage[k].second];
      DomainMemory& read = m.domains[k - begin];
      read.id = d.cgroup->id;
      read.path = d.cgroup->path;
      read.top = d.top;
      read.sampled = d.stats != nullptr;
      read.limit_bytes = d.limit;
      read.usage_bytes = read.working_set_bytes = 0;
      read.peak_bytes = read.failcnt = std::nullopt;
      if (d.top || !hierarchical_events) event_cgroups.push_back(d.cgroup->id);
      if (!d.stats) continue;
      const MemoryCgroupStats& ms = *d.stats;
      read.usage_bytes = ms.usage_bytes;
      read.working_set_bytes = ms.working_set_bytes;
      read.peak_bytes = ms.peak_bytes;
      // v2 counts the hits of memory.max among its events.
      auto failcnt = ms.events.find(hierarchical_events ? "max" : "failcnt");
      if (failcnt != ms.events.end()) read.failcnt = failcnt->second;
      s.read++;
      if (d.top) {
        s.usage += ms.usage_bytes;
        s.working_set += ms.working_set_bytes;
        s.has_swap |= ms.swap_bytes.has_value();
        s.swap += ms.swap_bytes.value_or(0);
        s.kernel_peak = std::max(s.kernel_peak, ms.peak_bytes.value_or(0));
        s.tops++;
      }
      if (d.limit) {
        const double fraction = static_cast<double>(ms.usage_bytes) /
                                static_cast<double>(std::max<uint64_t>(*d.limit, 1));
        s.near |= fraction >= config_.near_limit_fraction;
        if (fraction > s.closest_fraction) {
          s.closest_fraction = fraction;
          s.closest = &d;
        }
      }
      if (d.top || !hierarchical_events) {
        if (events_taken == event_samples.size()) event_samples.emplace_back();
        CgroupCounterSample& e = event_samples[events_taken++];
        e.cgroup_id = d.cgroup->id;
        e.stage = id;
        e.values.resize(kMemoryEvents.size());
        for (size_t i = 0; i < kMemoryEvents.size(); i++) {
          auto it = ms.events.find(kMemoryEvents[i]);
          e.values[i] = it == ms.events.end() ? 0 : it->second;
        }
      }
    }
    if (s.tops == 0 && !known) {
      stage = stages_.erase(stage);  // its top vanished mid-sample, and it has no last sample
    } else {
      if (s.tops > 0) FoldStage(now, domains[by_stage[begin].second].cgroup->stage, s, m);
      ++stage;
    }
  }
  for (; stage != stages_.end(); ++stage) stage->second.domains.clear();
  event_samples.resize(events_taken);
  std::sort(event_cgroups.begin(), event_cgroups.end());
  gone_event_cgroups_.clear();
  std::set_difference(event_cgroups_.begin(), event_cgroups_.end(), event_cgroups.begin(),
                      event_cgroups.end(), std::back_inserter(gone_event_cgroups_));
  event_cgroups_.swap(event_cgroups);
  events_.UpdateChanged(event_samples, gone_event_cgroups_);
  if (stages_changed_) events_.KeepStages(*known_);
  events_.ForEachTotal([&](StageId id, absl::Span<const uint64_t> v) {
    auto it = stages_.find(id);
    // A stage whose top vanished mid-sample keeps its last sample's (as its other figures).
    if (it == stages_.end() || it->second.sampled_at != now) return;
    it->second.events.assign(v.begin(), v.end());  // into its room: no allocation
  });
}

void MemorySampler::FoldStage(absl::Time now, const Stage& stage, const StageSum& s,
                              StageMemory& m) const {
  m.stage = stage;
  // The interval since the last sample counts as near the limit if that sample was.
  if (m.near_limit && m.sampled_at != absl::InfinitePast()) {
    m.near_limit_seconds += absl::ToDoubleSeconds(now - m.sampled_at);
  }
  m.near_limit = s.near;
  m.usage_bytes = s.usage;
  m.working_set_bytes = s.working_set;
  m.swap_bytes = s.has_swap ? std::optional<uint64_t>(s.swap) : std::nullopt;
  m.limit_bytes = std::nullopt;
  m.headroom_bytes = std::nullopt;
  if (s.closest) {
    const uint64_t limit = *s.closest->limit, usage = s.closest->stats->usage_bytes;
    m.limit_bytes = limit;
    m.headroom_bytes = usage < limit ? limit - usage : 0;
  }
  m.limit_domains = s.read;
  // A single cgroup's own high-water mark also catches spikes between samples.
  m.peak_bytes = std::max({m.peak_bytes, s.usage, s.tops == 1 ? s.kernel_peak : 0});
  m.sampled_at = now;
}

void MemorySampler::ReadOomKills(absl::Time now, const std::vector<NamedCgroup>& live) {
  const absl::Time last_kill = absl::FromUnixNanos(last_oom_kill_ns_.load());
  const uint64_t drops = oom_events_dropped_ ? oom_events_dropped_() : 0;
  const absl::Duration net = oom_events_dropped_ ? kOomCountsTracedInterval : kOomCountsInterval;
  const bool due = oom_all_read_ == absl::InfinitePast() || now - oom_all_read_ >= net ||
                   now - last_kill <= kAfterOomKill || drops != oom_drops_seen_;
  if (!due) return;
  oom_all_read_ = now;
  oom_drops_seen_ = drops;
  oom_cgroups_.clear();
  for (const NamedCgroup& c : live) {
    absl::StatusOr<uint64_t> kills = reader_.oom_kills(c);
    if (!kills.ok()) continue;  // removed since the refresh, or no memory controller here
    oom_cgroups_[c.id] = {c, *kills};
  }
  FoldOomKills(now);
}

void MemorySampler::OnTasksRanTraced(std::function<std::optional<std::vector<uint64_t>>()> ran) {
  tasks_ran_ = std::move(ran);
  tops_live_ = nullptr;  // the indexes above are found with the next sample's tops
}

void MemorySampler::OnOomKillsTraced(std::function<uint64_t()> dropped) {
  oom_events_dropped_ = std::move(dropped);
  oom_drops_seen_ = oom_events_dropped_();
}

void MemorySampler::ReadOomBaseline(absl::Time now) {
  if (!(parts_ & kOomPart)) return;
  namer_->Refresh();
  ReadOomKills(now, *namer_->Live());
}

void MemorySampler::ReadVictims(absl::Time now) {
  std::vector<uint64_t> victims;
  {
    absl::MutexLock lock(&wake_mu_);
    victims.swap(victims_);
  }
  if (victims.empty() || oom_all_read_ == absl::InfinitePast()) return;  // no baseline yet
  if (std::find(victims.begin(), victims.end(), 0) != victims.end()) {
    oom_all_read_ = absl::InfinitePast();  // not known where: every cgroup is read
    ReadOomKills(now, *namer_->Live());
  } else {
    std::sort(victims.begin(), victims.end());
    victims.erase(std::unique(victims.begin(), victims.end()), victims.end());
    for (uint64_t id : victims) {
      // Often made a moment before its job started, since the last refresh.
      std::optional<NamedCgroup> c = namer_->LookupNow(id);
      if (!c) continue;
      if (absl::StatusOr<uint64_t> kills = reader_.oom_kills(*c); kills.ok()) {
        oom_cgroups_[id] = {*std::move(c), *kills};
      }
    }
    FoldOomKills(now);
  }
  auto next = std::make_shared<Snapshot>(*Latest());
  next->oom_kills = oom_kills_;
  next->oom_kills_read = oom_kills_read_;
  Publish(std::move(next));
}

void MemorySampler::FoldOomKills(absl::Time now) {
  oom_kills_read_ = now;
  std::vector<CgroupCounterSample> samples;
  samples.reserve(oom_cgroups_.size());
  for (const auto& [id, c] : oom_cgroups_) samples.push_back({id, c.cgroup.stage.id, {c.kills}});
  oom_counts_.Update(samples);
  oom_counts_.KeepStages(*namer_->stages()->KnownStageIds());
  oom_kills_.clear();
  for (const auto& [stage, values] : oom_counts_.Totals()) oom_kills_[stage] = values[0];
}

std::shared_ptr<const Snapshot> MemorySampler::Latest() const {
  absl::MutexLock lock(&mu_);
  return latest_;
}

}  // namespace stagewatch

#include "signals/placement/placement_probe.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "placement.skel.h"
#include "probes/cgroup_map.h"

namespace stagewatch {

static_assert(sizeof(placement_cgroup_stats) == 16);

namespace {

constexpr const char* kMigrateProbe = "sched_migrate_task";

struct Attempt {
  SkeletonPtr<placement_bpf, DestroyPlacementSkeleton> skel;
  int err = 0;
};

Attempt OpenAndLoad(const PlacementProbeOptions& o, bool tp_btf) {
  Attempt a;
  LIBBPF_OPTS(bpf_object_open_opts, open_opts);
  if (!o.features.btf_path.empty()) open_opts.btf_custom_path = o.features.btf_path.c_str();
  a.skel.reset(placement_bpf__open_opts(&open_opts));
  if (!a.skel) {
    a.err = -errno;
    return a;
  }
  placement_bpf* s = a.skel.get();
  s->rodata->cgroup_key = o.key;
  bpf_program__set_autoload(s->progs.placement_migrate_btf, tp_btf);
  bpf_program__set_autoload(s->progs.placement_migrate_raw, !tp_btf);
  a.err = placement_bpf__load(s);
  if (a.err) a.skel.reset();
  return a;
}

// CPU → node number, for every CPU the map holds (the rest count on node 0 in the program).
absl::Status FillCpuNodes(placement_bpf* s, const CpuNodes& nodes) {
  const int fd = bpf_map__fd(s->maps.placement_cpu_node);
  for (uint32_t cpu = 0; cpu < nodes.column_of_cpu.size() && cpu < PLACEMENT_MAX_CPUS; cpu++) {
    const uint32_t node = nodes.nodes[nodes.column_of_cpu[cpu]];
    if (bpf_map_update_elem(fd, &cpu, &node, BPF_ANY) != 0) {
      return absl::InternalError(
          absl::StrCat("filling the placement probe's CPU → node map: ", strerror(errno)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

void DestroyPlacementSkeleton(placement_bpf* skel) { placement_bpf__destroy(skel); }

std::vector<ProbeStatus> PlacementProbe::NotStarted(const std::string& why) {
  return {{.name = kMigrateProbe, .error = why}};
}

absl::StatusOr<std::unique_ptr<PlacementProbe>> PlacementProbe::Start(
    const PlacementProbeOptions& options) {
  bool tp_btf = options.features.tracing;
  Attempt a = OpenAndLoad(options, tp_btf);
  if (!a.skel && tp_btf) {  // trampolines refused after all: the raw form needs none
    tp_btf = false;
    a = OpenAndLoad(options, tp_btf);
  }
  if (!a.skel) {
    return absl::FailedPreconditionError(absl::StrCat(
        "loading the placement BPF program: ", strerror(-a.err),
        "; run with --log.level=debug to see the verifier log"));
  }
  std::unique_ptr<PlacementProbe> probe(new PlacementProbe());
  probe->skel_ = std::move(a.skel);
  placement_bpf* s = probe->skel_.get();
  if (absl::Status filled = FillCpuNodes(s, options.cpu_nodes); !filled.ok()) return filled;
  bpf_program* prog = tp_btf ? s->progs.placement_migrate_btf : s->progs.placement_migrate_raw;
  bpf_link** link = tp_btf ? &s->links.placement_migrate_btf : &s->links.placement_migrate_raw;
  ProbeStatus status{.name = kMigrateProbe, .attach_type = tp_btf ? "tp_btf" : "raw_tracepoint"};
  *link = bpf_program__attach(prog);
  if (*link) {
    status.attached = true;
  } else {
    status.error = absl::StrCat("attaching ", bpf_program__name(prog), ": ", strerror(errno));
  }
  probe->statuses_.push_back(status);
  return probe;
}

namespace {
void AddCpu(placement_cgroup_stats& sum, const placement_cgroup_stats& cpu) {
  sum.node_migrations += cpu.node_migrations;
  sum.cross_node_migrations += cpu.cross_node_migrations;
}
}  // namespace

std::optional<PlacementCgroupCounts> PlacementProbe::ReadCgroup(uint64_t cgroup_id) const {
  std::optional<placement_cgroup_stats> sum = LookupPerCpu<uint64_t, placement_cgroup_stats>(
      bpf_map__fd(skel_->maps.placement_stats), cgroup_id, AddCpu);
  if (!sum) return std::nullopt;
  return PlacementCgroupCounts{cgroup_id, sum->node_migrations, sum->cross_node_migrations};
}

std::vector<PlacementCgroupCounts> PlacementProbe::Read() const {
  std::vector<PlacementCgroupCounts> out;
  for (const auto& [id, sum] : ReadPerCpuHash<uint64_t, placement_cgroup_stats>(
           bpf_map__fd(skel_->maps.placement_stats), AddCpu)) {
    out.push_back({id, sum.node_migrations, sum.cross_node_migrations});
  }
  return out;
}

void PlacementProbe::Delete(uint64_t cgroup_id) {
  bpf_map__delete_elem(skel_->maps.placement_stats, &cgroup_id, sizeof(cgroup_id), 0);
}

uint64_t PlacementProbe::overflows() const {
  return __atomic_load_n(&skel_->bss->placement_stats_overflows, __ATOMIC_RELAXED);
}

std::vector<ProgramStats> PlacementProbe::program_stats() const {
  return ReadProgramStats(skel_->obj);
}

}  // namespace stagewatch

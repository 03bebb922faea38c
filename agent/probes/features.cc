#include "probes/features.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace stagewatch {
namespace {

constexpr const char* kKernelBtf = "/sys/kernel/btf/vmlinux";
constexpr int kCapSysAdmin = 21;
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

bool FileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

uint64_t EffectiveCapabilities() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    absl::string_view rest = line;
    if (absl::ConsumePrefix(&rest, "CapEff:")) {
      uint64_t caps = 0;
      if (absl::SimpleHexAtoi(absl::StripAsciiWhitespace(rest), &caps)) return caps;
    }
  }
  return 0;
}

bool HasCapability(uint64_t caps, int cap) { return (caps >> cap) & 1; }

struct BtfDeleter {
  void operator()(btf* b) const { btf__free(b); }
};
using BtfPtr = std::unique_ptr<btf, BtfDeleter>;

BtfPtr ParseBtf(const std::string& path) {
  btf* b = btf__parse(path.c_str(), nullptr);
  if (libbpf_get_error(b)) return nullptr;
  return BtfPtr(b);
}

// The FUNC_PROTO behind typedef btf_trace_<name> (a pointer to a function).
const btf_type* TracepointProto(const btf* b, std::string_view name) {
  const std::string type_name = "btf_trace_" + std::string(name);
  int id = btf__find_by_name_kind(b, type_name.c_str(), BTF_KIND_TYPEDEF);
  if (id < 0) return nullptr;
  const btf_type* t = btf__type_by_id(b, id);
  t = btf__type_by_id(b, t->type);  // PTR
  if (!t || !btf_is_ptr(t)) return nullptr;
  t = btf__type_by_id(b, t->type);  // FUNC_PROTO
  return t && btf_is_func_proto(t) ? t : nullptr;
}

}  // namespace

std::string TracefsPath() {
  for (const char* dir : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    if (FileExists(absl::StrCat(dir, "/events"))) return dir;
  }
  return "";
}

bool BtfHasRawTracepoint(const std::string& btf_path, std::string_view name) {
  BtfPtr b = ParseBtf(btf_path);
  return b && TracepointProto(b.get(), name) != nullptr;
}

bool RawTracepointArgIsTask(const std::string& btf_path, std::string_view name, int index) {
  return RawTracepointArgIsStruct(btf_path, name, index, "task_struct");
}

bool RawTracepointArgIsStruct(const std::string& btf_path, std::string_view name, int index,
                              std::string_view struct_name) {
  BtfPtr b = ParseBtf(btf_path);
  if (!b) return false;
  const btf_type* proto = TracepointProto(b.get(), name);
  // Parameter 0 is the tracepoint's hidden `void *__data`.
  if (!proto || btf_vlen(proto) <= index + 1) return false;
  const btf_param* param = btf_params(proto) + index + 1;
  const btf_type* t = btf__type_by_id(b.get(), param->type);
  if (!t || !btf_is_ptr(t)) return false;
  t = btf__type_by_id(b.get(), t->type);
  while (t && (btf_is_mod(t) || btf_is_typedef(t))) t = btf__type_by_id(b.get(), t->type);
  return t && btf_is_struct(t) && btf__name_by_offset(b.get(), t->name_off) == struct_name;
}

bool BtfStructHasMember(const std::string& btf_path, std::string_view type,
                        std::string_view member) {
  BtfPtr b = ParseBtf(btf_path);
  if (!b) return false;
  int id = btf__find_by_name_kind(b.get(), std::string(type).c_str(), BTF_KIND_STRUCT);
  if (id < 0) return false;
  const btf_type* t = btf__type_by_id(b.get(), id);
  const btf_member* m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); i++, m++) {
    if (btf__name_by_offset(b.get(), m->name_off) == member) return true;
  }
  return false;
}

KernelFeatures ProbeKernelFeatures(const std::string& btf_override) {
  KernelFeatures f;
  utsname uts{};
  if (uname(&uts) == 0) f.kernel_release = uts.release;

  const uint64_t caps = EffectiveCapabilities();
  f.privileged = HasCapability(caps, kCapSysAdmin) ||
                 (HasCapability(caps, kCapBpf) && HasCapability(caps, kCapPerfmon));

  const std::string btf_path = btf_override.empty() ? kKernelBtf : btf_override;
  if (FileExists(btf_path) && ParseBtf(btf_path)) {
    f.btf = true;
    f.btf_path = btf_path;
  }

  if (f.privileged) {
    f.ringbuf = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, nullptr) == 1;
    f.raw_tracepoint = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_RAW_TRACEPOINT, nullptr) == 1;
    f.tracing = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_TRACING, nullptr) == 1;
  }
  f.tracefs = !TracefsPath().empty();
  f.kprobe_events = FileExists("/sys/bus/event_source/devices/kprobe/type");

  std::ifstream stats("/proc/sys/kernel/bpf_stats_enabled");
  int enabled = 0;
  f.bpf_stats_enabled = (stats >> enabled) && enabled == 1;
  return f;
}

}  // namespace stagewatch

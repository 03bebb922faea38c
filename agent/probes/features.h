// What the running kernel supports, probed once at start (never guessed from the version).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stagewatch {

struct KernelFeatures {
  std::string kernel_release;
  bool privileged = false;  // CAP_SYS_ADMIN, or CAP_BPF with CAP_PERFMON
  std::string btf_path;     // BTF used for CO-RE; empty if none found
  bool btf = false;
  bool ringbuf = false;
  bool raw_tracepoint = false;
  bool tracing = false;     // BPF_PROG_TYPE_TRACING: fentry, tp_btf
  bool kprobe_events = false;
  bool tracefs = false;     // classic tracepoints need tracefs for their ids
  bool bpf_stats_enabled = false;
};

// `btf_override` replaces /sys/kernel/btf/vmlinux (--bpf.btf-path). Program-type probes load
// tiny programs and so report false without privileges.
KernelFeatures ProbeKernelFeatures(const std::string& btf_override = "");

// Whether the raw tracepoint `name` passes a `struct task_struct *` as its argument `index`
// (0-based, after the hidden context), read from the BTF of btf_trace_<name>.
bool RawTracepointArgIsTask(const std::string& btf_path, std::string_view name, int index);

// Whether argument `index` of the raw tracepoint `name` is a pointer to `struct <struct_name>`.
bool RawTracepointArgIsStruct(const std::string& btf_path, std::string_view name, int index,
                              std::string_view struct_name);

// Whether the running kernel has the tracepoint (its btf_trace_<name> type in BTF).
bool BtfHasRawTracepoint(const std::string& btf_path, std::string_view name);

// Whether `struct <type>` has a member `member` in the kernel's BTF (a config-dependent field).
bool BtfStructHasMember(const std::string& btf_path, std::string_view type,
                        std::string_view member);

// Where tracefs is mounted, or "" (libbpf needs it to attach classic tracepoints).
std::string TracefsPath();

}  // namespace stagewatch

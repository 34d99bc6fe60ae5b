#pragma once
// The process families every Prometheus client exports, under the names its
// conventions give them: process_cpu_seconds_total (user + system, every
// thread), process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds (the soft RLIMIT_NOFILE) and
// process_start_time_seconds (since the epoch, from /proc/self/stat and the
// boot time in /proc/stat, as the Go client computes it); and xdpvhostd's
// resource ledger (sys/resource_ledger.hpp) as xdpvhost_open_fds{kind},
// xdpvhost_mapped_bytes{kind}, xdpvhost_mappings{kind}, xdpvhost_threads,
// xdpvhost_heap_bytes{state} and xdpvhost_bpf_objects{object}.

#include <cstdint>
#include <optional>

#include "family_builder.hpp"
#include "sys/resource_ledger.hpp"

namespace xdpvhost::daemon::metrics {

struct ProcessStats {
  double cpu_seconds = 0;
  std::uint64_t resident_bytes = 0;
  std::uint64_t virtual_bytes = 0;
  double start_time_seconds = 0;
};

// Read now from /proc/self; nullopt if /proc cannot be read.
std::optional<ProcessStats> read_process_stats();

// The process families and the ledger's, from `ledger` (read once per
// collection) and /proc/self/stat.
void add_process_families(Families& out, const sys::ResourceLedger& ledger);

}  // namespace xdpvhost::daemon::metrics

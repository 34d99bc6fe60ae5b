#include "process_metrics.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sys/proc_file.hpp"

namespace xdpvhost::daemon::metrics {

namespace {

using sys::read_small_file;

// Seconds since the epoch the machine booted (/proc/stat "btime").
std::optional<double> boot_time() {
  auto text = read_small_file("/proc/stat");
  if (!text) return std::nullopt;
  auto at = text->find("\nbtime ");
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(text->c_str() + at + 7, nullptr);
}

}  // namespace

std::optional<ProcessStats> read_process_stats() {
  auto stat = read_small_file("/proc/self/stat");
  if (!stat) return std::nullopt;
  // "pid (comm) state ppid ..." -- comm may hold spaces and parentheses.
  const auto close = stat->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  // Fields after the comm, counted from 3 (state).
  const char* p = stat->c_str() + close + 2;
  double fields[23] = {};
  for (int field = 3; field <= 24 && *p != '\0'; ++field) {
    char* end = nullptr;
    if (field == 3) {
      while (*p != ' ' && *p != '\0') ++p;
    } else {
      fields[field - 3] = std::strtod(p, &end);
      p = end;
    }
    while (*p == ' ') ++p;
  }
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  ProcessStats s;
  // utime (14), stime (15), starttime (22), vsize (23), rss (24).
  s.cpu_seconds = (fields[14 - 3] + fields[15 - 3]) / ticks;
  s.virtual_bytes = static_cast<std::uint64_t>(fields[23 - 3]);
  s.resident_bytes = static_cast<std::uint64_t>(fields[24 - 3] * page);
  if (auto boot = boot_time()) s.start_time_seconds = *boot + fields[22 - 3] / ticks;
  return s;
}

void add_process_families(Families& out, const sys::ResourceLedger& ledger) {
  const auto s = read_process_stats();
  if (!s) return;
  using prometheus::MetricType;
  auto one = [&](const char* name, MetricType type, const char* help, double value) {
    auto f = make_family(name, type, help);
    add_sample(f, {}, value);
    out.push_back(std::move(f));
  };
  one("process_cpu_seconds_total", MetricType::Counter,
      "Total user and system CPU time spent in seconds.", s->cpu_seconds);
  one("process_resident_memory_bytes", MetricType::Gauge, "Resident memory size in bytes.",
      static_cast<double>(s->resident_bytes));
  one("process_virtual_memory_bytes", MetricType::Gauge, "Virtual memory size in bytes.",
      static_cast<double>(s->virtual_bytes));
  one("process_open_fds", MetricType::Gauge, "Number of open file descriptors.",
      static_cast<double>(ledger.fds_total()));
  one("process_max_fds", MetricType::Gauge, "Maximum number of open file descriptors.",
      static_cast<double>(ledger.fd_limit));
  one("process_start_time_seconds", MetricType::Gauge,
      "Start time of the process since unix epoch in seconds.", s->start_time_seconds);

  auto fds = make_family("xdpvhost_open_fds", MetricType::Gauge,
                         "Open file descriptors of xdpvhostd by kind (their /proc/self/fd link).");
  for (std::size_t k = 0; k < sys::kFdKinds; ++k)
    add_sample(fds, {{"kind", sys::to_string(static_cast<sys::FdKind>(k))}},
               std::uint64_t{ledger.fds[k]});
  out.push_back(std::move(fds));
  auto bytes = make_family("xdpvhost_mapped_bytes", MetricType::Gauge,
                           "Bytes xdpvhostd has mapped, by what for: guest_memory, dirty_log, "
                           "umem, xsk_ring, other.");
  auto count = make_family("xdpvhost_mappings", MetricType::Gauge,
                           "Mappings xdpvhostd holds, by what for (as xdpvhost_mapped_bytes).");
  for (std::size_t k = 0; k < sys::kMappingKinds; ++k) {
    const char* kind = sys::to_string(static_cast<sys::MappingKind>(k));
    add_sample(bytes, {{"kind", kind}}, ledger.mapped.bytes[k]);
    add_sample(count, {{"kind", kind}}, ledger.mapped.count[k]);
  }
  out.push_back(std::move(bytes));
  out.push_back(std::move(count));
  one("xdpvhost_threads", MetricType::Gauge, "Threads of xdpvhostd.",
      static_cast<double>(ledger.threads));
  auto heap = make_family("xdpvhost_heap_bytes", MetricType::Gauge,
                          "The heap of xdpvhostd as its allocator sees it: in_use (allocated, "
                          "not freed; a leak grows it) and free (kept for reuse).");
  add_sample(heap, {{"state", "in_use"}}, ledger.heap.in_use);
  add_sample(heap, {{"state", "free"}}, ledger.heap.free);
  out.push_back(std::move(heap));
  auto bpf = make_family("xdpvhost_bpf_objects", MetricType::Gauge,
                         "BPF programs and maps xdpvhostd holds an fd of.");
  add_sample(bpf, {{"object", "program"}}, std::uint64_t{ledger.bpf_programs.size()});
  add_sample(bpf, {{"object", "map"}}, std::uint64_t{ledger.bpf_maps.size()});
  out.push_back(std::move(bpf));
}

}  // namespace xdpvhost::daemon::metrics

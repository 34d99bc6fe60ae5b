#pragma once
// What the process holds, read when asked (status, metrics, tests): every
// open fd by kind (/proc/self/fd), the BPF programs and maps those fds are
// (/proc/self/fdinfo), the bytes of every MemoryMapping by kind, threads and
// RSS (/proc/self/status), and the heap as the allocator sees it. A daemon
// that runs for months shows drift here before a limit bites. Allocates,
// reads /proc and walks the allocator's arenas: never on the hot path.

#include <array>
#include <cstdint>
#include <vector>

#include "sys/fd_kind.hpp"
#include "sys/memory_mapping.hpp"

namespace xdpvhost::sys {

// A BPF program or map held through an fd (one entry per object, however
// many fds refer to it).
struct BpfObject {
  std::uint32_t id = 0;
  std::uint32_t type = 0;     // enum bpf_prog_type / bpf_map_type
  std::uint64_t memlock = 0;  // bytes the kernel charges for it
  bool operator==(const BpfObject&) const = default;
};

// The heap as the allocator in use sees it (glibc's mallinfo2, or the
// sanitizer's allocator in a sanitizer build). RSS holds both parts and
// more; a leak grows `in_use`, while `free` is what the allocator keeps
// for reuse (it follows the peak and fragmentation, not the live data).
struct HeapBytes {
  std::uint64_t in_use = 0;  // allocated and not yet freed (small chunks and mmapped ones)
  std::uint64_t free = 0;    // freed, kept in the arenas for reuse
  bool operator==(const HeapBytes&) const = default;
};

HeapBytes heap_bytes() noexcept;

struct ResourceLedger {
  std::array<std::uint32_t, kFdKinds> fds{};  // by FdKind
  std::uint64_t fd_limit = 0;                 // the soft RLIMIT_NOFILE
  std::vector<BpfObject> bpf_programs;        // by id
  std::vector<BpfObject> bpf_maps;            // by id
  MappedTotals mapped;
  std::uint32_t threads = 0;
  std::uint64_t rss_bytes = 0;
  HeapBytes heap;

  std::uint32_t fds_total() const noexcept;
  std::uint32_t fds_of(FdKind kind) const noexcept { return fds[static_cast<std::size_t>(kind)]; }
};

// Reads it now. Parts /proc cannot give stay zero.
ResourceLedger take_resource_ledger();

}  // namespace xdpvhost::sys

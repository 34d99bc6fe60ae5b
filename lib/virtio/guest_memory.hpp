#pragma once
// The guest's memory as the frontend shared it: regions of fds mapped into
// this process. Every guest address the datapath follows goes through the
// bounds-checked translations here; nothing outside a mapped region is ever
// returned.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sys/memory_mapping.hpp"
#include "sys/unique_fd.hpp"
#include "virtio/sigbus_guard.hpp"

namespace xdpvhost::virtio {

struct MemoryRegionSpec {
  std::uint64_t guest_phys_addr = 0;
  std::uint64_t size = 0;
  std::uint64_t user_addr = 0;    // the frontend's virtual address of the region
  std::uint64_t mmap_offset = 0;  // offset of the region in the fd
  sys::UniqueFd fd;
};

// A piece of guest memory that is contiguous in this process.
struct HostSpan {
  std::uint8_t* data = nullptr;
  std::uint32_t len = 0;
  std::uint64_t gpa = 0;  // the guest physical address of data (what the dirty log marks)
};

class GuestMemory {
 public:
  struct Region {
    std::uint64_t guest_phys_addr;
    std::uint64_t size;
    std::uint64_t user_addr;
    std::uint8_t* host;  // start of the region in this process
    sys::MemoryMapping mapping;
    // Catches a SIGBUS on the mapping (the file shrank, or lost pages that
    // cannot be had again); removed before the mapping goes (members are
    // destroyed in reverse order). Not set for wrap().
    GuardedRange guard;
  };

  GuestMemory() = default;
  GuestMemory(const GuestMemory&) = delete;
  GuestMemory& operator=(const GuestMemory&) = delete;

  // Maps every region; on failure returns nullptr and sets `error`. A region
  // is mapped only when it cannot shrink under the daemon unnoticed: a memfd
  // sealed against shrinking (F_SEAL_SHRINK, verified; its size is read
  // after the seal), or a tmpfs or hugetlbfs file (a memfd that refuses
  // sealing is one). Any other fd is refused. Every mapped region has a
  // SIGBUS guard: a seal does not stop a hole from being punched, and a
  // hugetlbfs page that cannot be had again faults like a truncation.
  static std::shared_ptr<const GuestMemory> map(std::vector<MemoryRegionSpec> specs,
                                                std::string& error);

  // Wraps memory this process already owns (tests, benchmarks). The regions
  // are addressed by guest_phys_addr == user_addr == host address offset.
  static std::shared_ptr<const GuestMemory> wrap(std::uint8_t* base, std::uint64_t gpa,
                                                 std::uint64_t size);

  // Host pointer for [gpa, gpa+len) if that range lies inside one region.
  std::uint8_t* translate_gpa(std::uint64_t gpa, std::uint64_t len) const noexcept;

  // Host pointer for a frontend virtual address range inside one region.
  std::uint8_t* translate_uva(std::uint64_t uva, std::uint64_t len) const noexcept;

  // Splits [gpa, gpa+len) into host spans, crossing adjacent regions. Returns
  // the number of spans written, or -1 if any byte is unmapped or more than
  // `max` spans would be needed.
  int gpa_to_spans(std::uint64_t gpa, std::uint32_t len, HostSpan* out, int max) const noexcept;

  const std::vector<Region>& regions() const noexcept { return regions_; }

  // True once a region's file was cut short (or lost pages) under its
  // mapping: the region now reads zeros, and the queues in it must stop.
  bool truncated() const noexcept { return truncated_.load(std::memory_order_relaxed); }

 private:
  const Region* find_gpa(std::uint64_t gpa) const noexcept;
  std::vector<Region> regions_;
  std::atomic<bool> truncated_{false};  // raised by the SIGBUS guard
};

}  // namespace xdpvhost::virtio

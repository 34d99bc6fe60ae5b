#pragma once
// The test frontend's guest RAM: one memfd, mapped shared here and handed to
// the backend with SET_MEM_TABLE, optionally described as two regions of that
// one fd the way QEMU does for guests above ~2.75 GiB (a GPA hole between
// them, a non-zero mmap_offset for the second). Frontend virtual addresses
// (user_addr) are deliberately different from guest physical addresses.
//
// A bump allocator hands out ring and buffer memory; it never frees (a guest
// "reboot" resets it). Not thread safe; not movable (queues point into it).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "sys/memory_mapping.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::testing {

struct ArenaOptions {
  // Total guest RAM bytes (the memfd size). Rounded up to 2 MiB.
  std::size_t size = std::size_t{64} << 20;
  // Two regions: [0, size/2) at GPA 0, [size/2, size) at second_region_gpa.
  bool two_regions = false;
  std::uint64_t second_region_gpa = std::uint64_t{4} << 30;
  // user_addr of memfd offset 0: region user_addr = user_address_base + mmap_offset.
  std::uint64_t user_address_base = 0x7f00'0000'0000;
};

// One entry of the memory table as sent to the backend.
struct ArenaRegion {
  std::uint64_t guest_phys_addr;
  std::uint64_t size;
  std::uint64_t user_addr;
  std::uint64_t mmap_offset;
};

class GuestMemoryArena {
 public:
  // Creates and maps the memfd; throws std::system_error on failure.
  explicit GuestMemoryArena(const ArenaOptions& options = {});
  GuestMemoryArena(const GuestMemoryArena&) = delete;
  GuestMemoryArena& operator=(const GuestMemoryArena&) = delete;

  int fd() const noexcept { return fd_.get(); }
  std::size_t size() const noexcept { return mapping_.size(); }
  std::uint8_t* host_base() const noexcept { return mapping_.data(); }
  std::span<const ArenaRegion> regions() const noexcept { return regions_; }

  // Bump allocation. allocate() takes the regions in turn (round robin) so
  // that rings and buffers land in both regions of a two-region arena; an
  // allocation never straddles a region. Throws std::bad_alloc when full.
  std::uint64_t allocate(std::size_t bytes, std::size_t align = 64);
  std::uint64_t allocate_in(std::size_t region, std::size_t bytes, std::size_t align = 64);
  std::size_t bytes_free(std::size_t region) const;
  // Forgets every allocation (guest reboot). Addresses handed out before are
  // handed out again.
  void reset_allocator();
  // Zeroes all guest RAM (both this mapping and the backend's see zeros).
  void zero();

  // Host pointer for [gpa, gpa+len) when it lies inside one region, else nullptr.
  std::uint8_t* host(std::uint64_t gpa, std::size_t len = 1) const noexcept;
  template <class T>
  T* as(std::uint64_t gpa) const noexcept {
    return reinterpret_cast<T*>(host(gpa, sizeof(T)));
  }
  bool contains(std::uint64_t gpa, std::size_t len) const noexcept {
    return host(gpa, len) != nullptr;
  }
  // Guest physical address of a host pointer into the mapping.
  std::optional<std::uint64_t> gpa_of(const void* host_ptr) const noexcept;
  // Frontend virtual address (what SET_VRING_ADDR carries) of a gpa.
  std::optional<std::uint64_t> user_addr_of(std::uint64_t gpa) const noexcept;
  // Host pointer for a frontend virtual address range, else nullptr.
  std::uint8_t* host_from_user_addr(std::uint64_t uva, std::size_t len = 1) const noexcept;

  // Addresses that are in no region, for robustness tests.
  std::uint64_t gpa_in_hole() const noexcept;   // between the regions (two-region arena),
                                                // else just past the end
  std::uint64_t gpa_past_end() const noexcept;  // first byte after the highest region
  // Last byte of a region's guest physical range.
  std::uint64_t region_last_gpa(std::size_t region) const noexcept;

 private:
  sys::UniqueFd fd_;
  sys::MemoryMapping mapping_;
  std::vector<ArenaRegion> regions_;
  std::vector<std::uint64_t> cursor_;  // next free byte offset inside each region
  std::size_t next_region_ = 0;
};

}  // namespace xdpvhost::testing

#include "frontend/guest_memory_arena.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>

namespace xdpvhost::testing {
namespace {

constexpr std::size_t kSizeAlign = std::size_t{2} << 20;
// Nothing is allocated in the first page of region 0, so a descriptor address
// of 0 is never a valid buffer.
constexpr std::uint64_t kFirstAllocation = 0x1000;

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), what);
}

std::uint64_t align_up(std::uint64_t v, std::uint64_t align) {
  return (v + align - 1) / align * align;
}

}  // namespace

GuestMemoryArena::GuestMemoryArena(const ArenaOptions& options) {
  const std::size_t size = align_up(options.size == 0 ? kSizeAlign : options.size, kSizeAlign);
  fd_.reset(::memfd_create("xdpvhost-test-guest", MFD_CLOEXEC));
  if (!fd_) throw_errno("memfd_create");
  if (::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) throw_errno("ftruncate");
  void* addr = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
  if (addr == MAP_FAILED) throw_errno("mmap");
  mapping_ = sys::MemoryMapping(addr, size);

  if (options.two_regions) {
    const std::uint64_t low = size / 2;
    if (options.second_region_gpa < low) {
      throw std::system_error(EINVAL, std::generic_category(),
                              "second_region_gpa overlaps region 0");
    }
    regions_.push_back({0, low, options.user_address_base, 0});
    regions_.push_back(
        {options.second_region_gpa, size - low, options.user_address_base + low, low});
  } else {
    regions_.push_back({0, size, options.user_address_base, 0});
  }
  reset_allocator();
}

void GuestMemoryArena::reset_allocator() {
  cursor_.assign(regions_.size(), 0);
  cursor_[0] = kFirstAllocation;
  next_region_ = 0;
}

void GuestMemoryArena::zero() {
  // Punching a hole drops the pages: both mappings read zeros afterwards and
  // no memory stays committed. Fall back to memset where that is refused.
  if (::fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                  static_cast<off_t>(size())) != 0) {
    std::memset(mapping_.data(), 0, size());
  }
}

std::uint64_t GuestMemoryArena::allocate(std::size_t bytes, std::size_t align) {
  for (std::size_t tries = 0; tries < regions_.size(); ++tries) {
    const std::size_t region = next_region_;
    next_region_ = (next_region_ + 1) % regions_.size();
    const std::uint64_t start = align_up(cursor_[region], align);
    if (start + bytes <= regions_[region].size) return allocate_in(region, bytes, align);
  }
  throw std::bad_alloc();
}

std::uint64_t GuestMemoryArena::allocate_in(std::size_t region, std::size_t bytes,
                                            std::size_t align) {
  if (region >= regions_.size() || align == 0) throw std::bad_alloc();
  const std::uint64_t start = align_up(cursor_[region], align);
  if (start + bytes > regions_[region].size) throw std::bad_alloc();
  cursor_[region] = start + bytes;
  return regions_[region].guest_phys_addr + start;
}

std::size_t GuestMemoryArena::bytes_free(std::size_t region) const {
  if (region >= regions_.size()) return 0;
  return regions_[region].size - cursor_[region];
}

std::uint8_t* GuestMemoryArena::host(std::uint64_t gpa, std::size_t len) const noexcept {
  for (const ArenaRegion& r : regions_) {
    if (gpa < r.guest_phys_addr) continue;
    const std::uint64_t off = gpa - r.guest_phys_addr;
    if (off >= r.size || len > r.size - off) continue;
    return mapping_.data() + r.mmap_offset + off;
  }
  return nullptr;
}

std::optional<std::uint64_t> GuestMemoryArena::gpa_of(const void* host_ptr) const noexcept {
  const auto* p = static_cast<const std::uint8_t*>(host_ptr);
  if (p < mapping_.data() || p >= mapping_.data() + mapping_.size()) return std::nullopt;
  const std::uint64_t file_off = static_cast<std::uint64_t>(p - mapping_.data());
  for (const ArenaRegion& r : regions_) {
    if (file_off >= r.mmap_offset && file_off - r.mmap_offset < r.size) {
      return r.guest_phys_addr + (file_off - r.mmap_offset);
    }
  }
  return std::nullopt;
}

std::optional<std::uint64_t> GuestMemoryArena::user_addr_of(std::uint64_t gpa) const noexcept {
  for (const ArenaRegion& r : regions_) {
    if (gpa >= r.guest_phys_addr && gpa - r.guest_phys_addr < r.size) {
      return r.user_addr + (gpa - r.guest_phys_addr);
    }
  }
  return std::nullopt;
}

std::uint8_t* GuestMemoryArena::host_from_user_addr(std::uint64_t uva,
                                                    std::size_t len) const noexcept {
  for (const ArenaRegion& r : regions_) {
    if (uva < r.user_addr) continue;
    const std::uint64_t off = uva - r.user_addr;
    if (off >= r.size || len > r.size - off) continue;
    return mapping_.data() + r.mmap_offset + off;
  }
  return nullptr;
}

std::uint64_t GuestMemoryArena::gpa_in_hole() const noexcept {
  if (regions_.size() > 1) return regions_[0].guest_phys_addr + regions_[0].size + 0x1000;
  return gpa_past_end();
}

std::uint64_t GuestMemoryArena::gpa_past_end() const noexcept {
  std::uint64_t end = 0;
  for (const ArenaRegion& r : regions_) end = std::max(end, r.guest_phys_addr + r.size);
  return end;
}

std::uint64_t GuestMemoryArena::region_last_gpa(std::size_t region) const noexcept {
  if (region >= regions_.size()) return 0;
  return regions_[region].guest_phys_addr + regions_[region].size - 1;
}

}  // namespace xdpvhost::testing

#include "virtio/guest_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xdpvhost::virtio {
namespace {

// True if [addr, addr+len) lies inside [base, base+size), without overflow.
bool inside(std::uint64_t addr, std::uint64_t len, std::uint64_t base, std::uint64_t size) {
  if (addr < base) return false;
  const std::uint64_t off = addr - base;
  return off <= size && len <= size - off;
}

std::uint64_t round_up(std::uint64_t v, std::uint64_t align) {
  return (v + align - 1) / align * align;
}

}  // namespace

std::shared_ptr<const GuestMemory> GuestMemory::map(std::vector<MemoryRegionSpec> specs,
                                                    std::string& error) {
  auto mem = std::make_shared<GuestMemory>();
  mem->regions_.reserve(specs.size());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    auto& s = specs[i];
    if (s.size == 0 || !s.fd.valid()) {
      error = "region " + std::to_string(i) + ": empty or without fd";
      return nullptr;
    }
    if (s.guest_phys_addr + s.size < s.guest_phys_addr || s.user_addr + s.size < s.user_addr ||
        s.mmap_offset + s.size < s.mmap_offset) {
      error = "region " + std::to_string(i) + ": address range wraps";
      return nullptr;
    }
    for (const auto& r : mem->regions_) {
      if (s.guest_phys_addr < r.guest_phys_addr + r.size &&
          r.guest_phys_addr < s.guest_phys_addr + s.size) {
        error = "region " + std::to_string(i) + ": overlaps another region";
        return nullptr;
      }
    }
    struct stat st {};
    if (::fstat(s.fd.get(), &st) != 0) {
      error = "region " + std::to_string(i) + ": fstat failed: " + std::strerror(errno);
      return nullptr;
    }
    // Touching a mapping past the end of its file raises SIGBUS: a region the
    // fd does not back entirely is refused. Where the frontend allows it, the
    // fd is also sealed against shrinking (QEMU's memfd backend seals it
    // itself), so it cannot be cut short later either.
    if (S_ISREG(st.st_mode)) {
      if (static_cast<std::uint64_t>(st.st_size) < s.mmap_offset + s.size) {
        error = "region " + std::to_string(i) + ": ends at byte " +
                std::to_string(s.mmap_offset + s.size) + " of an fd of " +
                std::to_string(st.st_size) + " bytes";
        return nullptr;
      }
      ::fcntl(s.fd.get(), F_ADD_SEALS, F_SEAL_SHRINK);
    }
    // hugetlbfs needs lengths aligned to its page size; st_blksize says which.
    std::uint64_t align = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    if (static_cast<std::uint64_t>(st.st_blksize) > align)
      align = static_cast<std::uint64_t>(st.st_blksize);
    const std::uint64_t length = round_up(s.mmap_offset + s.size, align);
    void* addr = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd.get(), 0);
    if (addr == MAP_FAILED) {
      error = "region " + std::to_string(i) + ": mmap failed: " + std::strerror(errno);
      return nullptr;
    }
    sys::MemoryMapping mapping(addr, length);
    auto* host = mapping.data() + s.mmap_offset;
    mem->regions_.push_back(
        Region{s.guest_phys_addr, s.size, s.user_addr, host, std::move(mapping)});
    // The fd is closed when `specs` goes: the mapping keeps the memory alive.
  }
  return mem;
}

std::shared_ptr<const GuestMemory> GuestMemory::wrap(std::uint8_t* base, std::uint64_t gpa,
                                                     std::uint64_t size) {
  auto mem = std::make_shared<GuestMemory>();
  mem->regions_.push_back(Region{gpa, size, gpa, base, sys::MemoryMapping{}});
  return mem;
}

const GuestMemory::Region* GuestMemory::find_gpa(std::uint64_t gpa) const noexcept {
  for (const auto& r : regions_)
    if (gpa >= r.guest_phys_addr && gpa - r.guest_phys_addr < r.size) return &r;
  return nullptr;
}

std::uint8_t* GuestMemory::translate_gpa(std::uint64_t gpa, std::uint64_t len) const noexcept {
  for (const auto& r : regions_)
    if (inside(gpa, len, r.guest_phys_addr, r.size)) return r.host + (gpa - r.guest_phys_addr);
  return nullptr;
}

std::uint8_t* GuestMemory::translate_uva(std::uint64_t uva, std::uint64_t len) const noexcept {
  for (const auto& r : regions_)
    if (inside(uva, len, r.user_addr, r.size)) return r.host + (uva - r.user_addr);
  return nullptr;
}

int GuestMemory::gpa_to_spans(std::uint64_t gpa, std::uint32_t len, HostSpan* out,
                              int max) const noexcept {
  int n = 0;
  while (len > 0) {
    const Region* r = find_gpa(gpa);
    if (r == nullptr || n == max) return -1;
    const std::uint64_t off = gpa - r->guest_phys_addr;
    const std::uint64_t avail = r->size - off;
    const auto take = static_cast<std::uint32_t>(avail < len ? avail : len);
    out[n++] = HostSpan{r->host + off, take};
    gpa += take;
    len -= take;
  }
  return n;
}

}  // namespace xdpvhost::virtio

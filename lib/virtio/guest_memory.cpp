#include "virtio/guest_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
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

constexpr unsigned long kTmpfsMagic = 0x01021994;      // TMPFS_MAGIC: tmpfs, memfds
constexpr unsigned long kHugetlbfsMagic = 0x958458f6;  // HUGETLBFS_MAGIC

// Whether a region's fd may be mapped: a regular file that is sealed against
// shrinking (a memfd that allows sealing is sealed here), or a tmpfs or
// hugetlbfs file the guard can recover (a memfd that refuses sealing is one).
bool mappable(int fd, const struct stat& st, const std::string& where, std::string& error) {
  if (!S_ISREG(st.st_mode)) {
    error = where + ": the fd is not a memfd or a file (mode " + std::to_string(st.st_mode) + ")";
    return false;
  }
  // Sealed against shrinking: it can never be cut short. QEMU's memfd
  // backend seals its memfds itself; one that allows sealing we seal now.
  ::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK);
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals >= 0 && (seals & F_SEAL_SHRINK) != 0) return true;
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) {
    error = where + ": fstatfs failed: " + std::strerror(errno);
    return false;
  }
  const auto type = static_cast<unsigned long>(fs.f_type);
  if (type != kTmpfsMagic && type != kHugetlbfsMagic) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%lx", type);
    error = where + ": a file on a filesystem (f_type " + hex +
            ") the frontend could truncate under the mapping; guest memory must be a memfd, a "
            "tmpfs or a hugetlbfs file";
    return false;
  }
  return true;
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
    const std::string where = "region " + std::to_string(i);
    struct stat st {};
    if (::fstat(s.fd.get(), &st) != 0) {
      error = where + ": fstat failed: " + std::strerror(errno);
      return nullptr;
    }
    // Touching a mapping past the end of its file raises SIGBUS: a region the
    // fd does not back entirely is refused, and so is a file that could be
    // cut short later without the guard knowing it.
    if (!mappable(s.fd.get(), st, where, error)) return nullptr;
    // The size that counts is the one after the seal: the frontend keeps the
    // fd and may shrink the file until the moment it is sealed.
    if (::fstat(s.fd.get(), &st) != 0) {
      error = where + ": fstat failed: " + std::strerror(errno);
      return nullptr;
    }
    if (static_cast<std::uint64_t>(st.st_size) < s.mmap_offset + s.size) {
      error = where + ": ends at byte " + std::to_string(s.mmap_offset + s.size) + " of an fd of " +
              std::to_string(st.st_size) + " bytes";
      return nullptr;
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
    sys::MemoryMapping mapping(addr, length, sys::MappingKind::kGuestMemory);
    auto* host = mapping.data() + s.mmap_offset;
    // Every region is guarded, sealed or not: a seal stops shrinking, not a
    // hole punched into the file (fallocate), and a page of a hugetlbfs hole
    // (or of a memfd under strict overcommit) that cannot be had again
    // faults with SIGBUS as a truncation does.
    GuardedRange guard = GuardedRange::add(mapping.data(), mapping.size(), &mem->truncated_, error);
    if (!guard.valid()) {
      error.insert(0, ": ").insert(0, where);
      return nullptr;
    }
    mem->regions_.push_back(
        Region{s.guest_phys_addr, s.size, s.user_addr, host, std::move(mapping), std::move(guard)});
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
    out[n++] = HostSpan{r->host + off, take, gpa};
    gpa += take;
    len -= take;
  }
  return n;
}

}  // namespace xdpvhost::virtio

#include "virtio/dirty_log.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace xdpvhost::virtio {

std::shared_ptr<const DirtyLog> DirtyLog::map(sys::UniqueFd fd, std::uint64_t size,
                                              std::uint64_t offset, std::string& error) {
  if (!fd.valid()) {
    error = "no log fd";
    return nullptr;
  }
  if (size == 0 || size > kMaxBytes) {
    error = "log size " + std::to_string(size) + " outside 1.." + std::to_string(kMaxBytes);
    return nullptr;
  }
  if (offset > kMaxBytes * 64 || offset + size < offset) {
    error = "log offset " + std::to_string(offset) + " out of range";
    return nullptr;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "the log fd is not a memfd or a regular file";
    return nullptr;
  }
  // A file the frontend could still cut short would SIGBUS the service
  // thread that marks it: only a log sealed against shrinking is mapped.
  ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK);
  const int seals = ::fcntl(fd.get(), F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    error = "the log fd is not sealed against shrinking (F_SEAL_SHRINK)";
    return nullptr;
  }
  // The size that counts is the one after the seal: the frontend keeps the fd
  // and may shrink the file until the moment it is sealed.
  if (::fstat(fd.get(), &st) != 0) {
    error = std::string("fstat of the log fd failed: ") + std::strerror(errno);
    return nullptr;
  }
  if (static_cast<std::uint64_t>(st.st_size) < offset + size) {
    error = "the log file holds " + std::to_string(st.st_size) + " bytes, offset + size is " +
            std::to_string(offset + size);
    return nullptr;
  }
  // Mapped from the page holding `offset` (mmap wants an aligned offset), in
  // whole pages of the file's own size: hugetlbfs maps, unmaps and lets the
  // guard replace only whole huge pages, and st_blksize says which.
  std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  if (static_cast<std::uint64_t>(st.st_blksize) > page)
    page = static_cast<std::uint64_t>(st.st_blksize);
  const std::uint64_t start = offset / page * page;
  const std::uint64_t length = (offset - start + size + page - 1) / page * page;
  void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(),
                   static_cast<off_t>(start));
  if (p == MAP_FAILED) {
    error = std::string("mmap of the log failed: ") + std::strerror(errno);
    return nullptr;
  }
  auto log = std::make_shared<DirtyLog>();
  log->mapping_ = sys::MemoryMapping(p, length, sys::MappingKind::kDirtyLog);
  // A seal does not stop a hole from being punched: a page of it that cannot
  // be had again (hugetlbfs, strict overcommit) faults with SIGBUS.
  log->guard_ = GuardedRange::add(p, length, &log->truncated_, error);
  if (!log->guard_.valid()) {
    error.insert(0, "the log: ");
    return nullptr;
  }
  log->bitmap_ = log->mapping_.data() + (offset - start);
  log->size_ = size;
  return log;  // the fd closes here; the mapping keeps the memory
}

std::shared_ptr<const DirtyLog> DirtyLog::wrap(std::uint8_t* bitmap, std::uint64_t size) {
  auto log = std::make_shared<DirtyLog>();
  log->bitmap_ = bitmap;
  log->size_ = size;
  return log;
}

bool DirtyLog::mark(std::uint64_t gpa, std::uint64_t len) const noexcept {
  if (len == 0) return true;
  const std::uint64_t last = gpa + len - 1;
  if (last < gpa) return false;  // wraps
  const std::uint64_t first_page = gpa >> kPageShift;
  const std::uint64_t last_page = last >> kPageShift;
  if ((last_page >> 3) >= size_) return false;
  for (std::uint64_t p = first_page; p <= last_page; ++p) {
    // Release: the guest memory write that made the page dirty happens
    // before any frontend load that sees this bit (see the header).
    std::atomic_ref<std::uint8_t>(bitmap_[p >> 3])
        .fetch_or(static_cast<std::uint8_t>(1u << (p & 7)), std::memory_order_release);
  }
  return true;
}

bool DirtyLog::is_marked(std::uint64_t page) const noexcept {
  if ((page >> 3) >= size_) return false;
  return (std::atomic_ref<std::uint8_t>(bitmap_[page >> 3]).load(std::memory_order_acquire) &
          (1u << (page & 7))) != 0;
}

}  // namespace xdpvhost::virtio

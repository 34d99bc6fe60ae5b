#pragma once
// The dirty log of a live migration (vhost-user.rst, "Migration"): a bitmap
// the frontend shares (SET_LOG_BASE), one bit per 4 KiB page of guest
// physical address, page p at byte p / 8, bit p % 8. Every write the
// backend makes into guest memory while logging is on sets the bits of the
// pages it touched, after the write.
//
// Memory order: the frontend reads and clears the bitmap concurrently (it
// fetches a word, zeroes it, then copies the pages whose bits were set).
// Each bit is set with an atomic fetch_or with release order: the guest
// memory write before it is visible to a frontend that observes the bit, so
// the page is never copied older than the write the bit stands for.
//
// Bounds: a page beyond the log is never marked; mark() returns false and
// the caller breaks the queue that asked (a bad log costs that port, never
// the process).

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "sys/memory_mapping.hpp"
#include "sys/unique_fd.hpp"
#include "virtio/sigbus_guard.hpp"

namespace xdpvhost::virtio {

class DirtyLog {
 public:
  static constexpr std::uint64_t kPageShift = 12;  // VHOST_LOG_PAGE 0x1000
  static constexpr std::uint64_t kPageSize = std::uint64_t{1} << kPageShift;
  // The largest log accepted: 1 TiB of guest physical address space.
  static constexpr std::uint64_t kMaxBytes = (std::uint64_t{1} << 40) / kPageSize / 8;

  DirtyLog() = default;
  DirtyLog(const DirtyLog&) = delete;
  DirtyLog& operator=(const DirtyLog&) = delete;

  // Maps `size` bytes of `fd` starting at `offset` (SET_LOG_BASE with
  // LOG_SHMFD). The fd must be a regular file that cannot shrink (a memfd
  // sealed with F_SEAL_SHRINK, as QEMU makes it; a sealable memfd is sealed
  // here) and hold offset + size bytes. nullptr with `error` otherwise.
  static std::shared_ptr<const DirtyLog> map(sys::UniqueFd fd, std::uint64_t size,
                                             std::uint64_t offset, std::string& error);

  // A log over memory the caller owns (tests, benchmarks).
  static std::shared_ptr<const DirtyLog> wrap(std::uint8_t* bitmap, std::uint64_t size);

  // Marks every page of [gpa, gpa + len) dirty. False (nothing marked) if
  // any of them lies beyond the log or the range wraps; len 0 marks nothing.
  bool mark(std::uint64_t gpa, std::uint64_t len) const noexcept;

  // Whether page `page` is marked (tests, reports; an acquire load).
  bool is_marked(std::uint64_t page) const noexcept;

  // True once the log's file lost pages under its mapping (the SIGBUS guard
  // replaced it): marks go nowhere, and the queues that log must stop.
  bool truncated() const noexcept { return truncated_.load(std::memory_order_relaxed); }

  std::uint64_t size() const noexcept { return size_; }
  // Guest physical bytes the log covers.
  std::uint64_t covered_bytes() const noexcept { return size_ * 8 * kPageSize; }
  const std::uint8_t* bitmap() const noexcept { return bitmap_; }

 private:
  sys::MemoryMapping mapping_;
  GuardedRange guard_;  // removed before the mapping goes (reverse order)
  std::atomic<bool> truncated_{false};
  std::uint8_t* bitmap_ = nullptr;
  std::uint64_t size_ = 0;
};

}  // namespace xdpvhost::virtio

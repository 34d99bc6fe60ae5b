#pragma once
// RAII owner of one mmap()ed range, and the process-wide count of what every
// owner holds, by what the range is for (the resource ledger's mapped bytes:
// sys/resource_ledger.hpp). The count changes only when a range is mapped or
// unmapped, never per frame.

#include <sys/mman.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace xdpvhost::sys {

enum class MappingKind : std::uint8_t {
  kGuestMemory,  // a region of a guest's memory table
  kDirtyLog,     // a live migration's dirty log
  kUmem,         // an AF_XDP UMEM frame area
  kXskRing,      // an AF_XDP ring (RX, TX, fill, completion)
  kOther,
};
inline constexpr std::size_t kMappingKinds = 5;

// The names the ledger uses (status, metrics label `kind`), in MappingKind's order.
inline constexpr std::array<const char*, kMappingKinds> kMappingKindNames{
    "guest_memory", "dirty_log", "umem", "xsk_ring", "other"};
constexpr const char* to_string(MappingKind kind) noexcept {
  return kMappingKindNames[static_cast<std::size_t>(kind)];
}

// What every MemoryMapping of the process holds now, by kind.
struct MappedTotals {
  std::array<std::uint64_t, kMappingKinds> bytes{};
  std::array<std::uint64_t, kMappingKinds> count{};
  std::uint64_t bytes_of(MappingKind k) const noexcept {
    return bytes[static_cast<std::size_t>(k)];
  }
  std::uint64_t count_of(MappingKind k) const noexcept {
    return count[static_cast<std::size_t>(k)];
  }
};

namespace detail {
struct MappingCounters {
  std::array<std::atomic<std::uint64_t>, kMappingKinds> bytes{};
  std::array<std::atomic<std::uint64_t>, kMappingKinds> count{};
};
inline MappingCounters mapping_counters;
}  // namespace detail

inline MappedTotals mapped_totals() noexcept {
  MappedTotals t;
  for (std::size_t k = 0; k < kMappingKinds; ++k) {
    t.bytes[k] = detail::mapping_counters.bytes[k].load(std::memory_order_relaxed);
    t.count[k] = detail::mapping_counters.count[k].load(std::memory_order_relaxed);
  }
  return t;
}

class MemoryMapping {
 public:
  MemoryMapping() = default;
  MemoryMapping(void* addr, std::size_t length, MappingKind kind = MappingKind::kOther) noexcept
      : addr_(static_cast<std::uint8_t*>(addr)), length_(length), kind_(kind) {
    if (addr_ != nullptr) count(+1);
  }
  MemoryMapping(const MemoryMapping&) = delete;
  MemoryMapping& operator=(const MemoryMapping&) = delete;
  MemoryMapping(MemoryMapping&& o) noexcept
      : addr_(std::exchange(o.addr_, nullptr)),
        length_(std::exchange(o.length_, 0)),
        kind_(o.kind_) {}
  MemoryMapping& operator=(MemoryMapping&& o) noexcept {
    if (this != &o) {
      reset();
      addr_ = std::exchange(o.addr_, nullptr);
      length_ = std::exchange(o.length_, 0);
      kind_ = o.kind_;
    }
    return *this;
  }
  ~MemoryMapping() { reset(); }

  std::uint8_t* data() const noexcept { return addr_; }
  std::size_t size() const noexcept { return length_; }
  bool valid() const noexcept { return addr_ != nullptr; }

  void reset() noexcept {
    if (addr_ != nullptr) {
      ::munmap(addr_, length_);
      count(-1);
    }
    addr_ = nullptr;
    length_ = 0;
  }

 private:
  // Relaxed: a count read by the ledger, ordering nothing else.
  void count(int sign) const noexcept {
    const auto k = static_cast<std::size_t>(kind_);
    if (sign > 0) {
      detail::mapping_counters.bytes[k].fetch_add(length_, std::memory_order_relaxed);
      detail::mapping_counters.count[k].fetch_add(1, std::memory_order_relaxed);
    } else {
      detail::mapping_counters.bytes[k].fetch_sub(length_, std::memory_order_relaxed);
      detail::mapping_counters.count[k].fetch_sub(1, std::memory_order_relaxed);
    }
  }

  std::uint8_t* addr_ = nullptr;
  std::size_t length_ = 0;
  MappingKind kind_ = MappingKind::kOther;
};

}  // namespace xdpvhost::sys

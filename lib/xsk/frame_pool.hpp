#pragma once
// Free list of UMEM frame addresses (LIFO, so recently used frames stay warm
// in cache). Owned by one service thread; no locking.
//
// Addresses are UMEM offsets. free() accepts any address inside a frame (the
// kernel hands back RX descriptors pointing at the packet data, i.e. frame
// base + headroom) and stores the frame base. A frame freed twice or an
// address outside the UMEM is refused and counted, never stored, so the
// pool cannot hand the same frame to two rings.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xdpvhost::xsk {

class FramePool {
 public:
  static constexpr std::uint64_t kInvalid = ~std::uint64_t{0};

  // frame_size must be a power of two; all frames start out free.
  FramePool(std::uint32_t frame_size, std::uint32_t frame_count);

  // A free frame's base address, or kInvalid when the pool is empty.
  std::uint64_t alloc() noexcept {
    if (free_.empty()) return kInvalid;
    const std::uint64_t addr = free_.back();
    free_.pop_back();
    in_pool_[addr >> shift_] = 0;
    return addr;
  }

  // Takes up to n frames into out[]; returns how many.
  std::uint32_t alloc_bulk(std::uint64_t* out, std::uint32_t n) noexcept;

  // Returns the frame holding addr to the pool. False (and counted in
  // rejected()) if addr is outside the UMEM or its frame is already free.
  bool free(std::uint64_t addr) noexcept {
    const std::uint64_t index = addr >> shift_;
    if (index >= frame_count_ || in_pool_[index]) {
      ++rejected_;
      return false;
    }
    in_pool_[index] = 1;
    free_.push_back(index << shift_);
    return true;
  }

  std::uint64_t frame_base(std::uint64_t addr) const noexcept {
    return addr & ~std::uint64_t{frame_size_ - 1};
  }
  std::uint32_t available() const noexcept { return static_cast<std::uint32_t>(free_.size()); }
  std::uint32_t frame_count() const noexcept { return frame_count_; }
  std::uint32_t frame_size() const noexcept { return frame_size_; }
  std::uint64_t rejected() const noexcept { return rejected_; }

 private:
  std::uint32_t frame_size_;
  std::uint32_t frame_count_;
  unsigned shift_;
  std::vector<std::uint64_t> free_;
  std::vector<std::uint8_t> in_pool_;  // 1 = frame is in free_
  std::uint64_t rejected_ = 0;
};

}  // namespace xdpvhost::xsk

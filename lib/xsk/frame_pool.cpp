#include "xsk/frame_pool.hpp"

#include <bit>

namespace xdpvhost::xsk {

FramePool::FramePool(std::uint32_t frame_size, std::uint32_t frame_count)
    : frame_size_(frame_size),
      frame_count_(frame_count),
      shift_(static_cast<unsigned>(std::countr_zero(frame_size))),
      in_pool_(frame_count, 1) {
  free_.reserve(frame_count);
  // Pushed in reverse so alloc() hands out frame 0 first.
  for (std::uint32_t i = frame_count; i > 0; --i) {
    free_.push_back(std::uint64_t{i - 1} << shift_);
  }
}

std::uint32_t FramePool::alloc_bulk(std::uint64_t* out, std::uint32_t n) noexcept {
  std::uint32_t i = 0;
  for (; i < n && !free_.empty(); ++i) {
    out[i] = free_.back();
    free_.pop_back();
    in_pool_[out[i] >> shift_] = 0;
  }
  return i;
}

}  // namespace xdpvhost::xsk

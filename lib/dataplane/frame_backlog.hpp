#pragma once
// Frames held for a guest that momentarily has no receive buffer posted, in
// arrival order, until it posts some. Bounded; owned by the port's service
// thread. This is what the tun socket's queue is for vhost_net: a guest that
// refills its ring a little late loses nothing (a TCP flow into a slow guest
// otherwise retransmits heavily).

#include <cstdint>
#include <cstring>
#include <memory>

#include "dataplane/frame.hpp"

namespace xdpvhost::dataplane {

class FrameBacklog {
 public:
  FrameBacklog(std::uint32_t capacity, std::uint32_t max_frame)
      : capacity_(capacity), slot_bytes_(max_frame) {}

  bool empty() const noexcept { return count_ == 0; }
  bool full() const noexcept { return count_ == capacity_; }
  std::uint32_t size() const noexcept { return count_; }

  // Copies the frame in; false if full or the frame does not fit a slot.
  bool push(const Frame& frame) {
    if (full() || frame.len > slot_bytes_) return false;
    if (!storage_) {
      storage_ = std::make_unique<std::uint8_t[]>(std::size_t{capacity_} * slot_bytes_);
      meta_ = std::make_unique<Meta[]>(capacity_);
    }
    const std::uint32_t i = (head_ + count_) % capacity_;
    meta_[i] = Meta{frame.len, frame.offload};
    gather(frame, 0, storage_.get() + std::size_t{i} * slot_bytes_, frame.len);
    ++count_;
    return true;
  }

  // The oldest frame (valid until pop()); `span` backs it.
  Frame front(Span& span) const noexcept {
    const Meta& m = meta_[head_];
    span = Span{storage_.get() + std::size_t{head_} * slot_bytes_, m.len};
    return Frame(span, m.offload);
  }
  void pop() noexcept {
    head_ = (head_ + 1) % capacity_;
    --count_;
  }
  // Forgets everything held; returns how many frames that was.
  std::uint32_t clear() noexcept {
    const std::uint32_t n = count_;
    head_ = count_ = 0;
    return n;
  }

 private:
  struct Meta {
    std::uint32_t len;
    Offload offload;
  };
  std::uint32_t capacity_;
  std::uint32_t slot_bytes_;
  std::uint32_t head_ = 0;
  std::uint32_t count_ = 0;
  std::unique_ptr<std::uint8_t[]> storage_;  // allocated on first use
  std::unique_ptr<Meta[]> meta_;
};

}  // namespace xdpvhost::dataplane

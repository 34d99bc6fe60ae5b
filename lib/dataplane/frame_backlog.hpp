#pragma once
// Frames held for a guest that momentarily has no receive buffer posted, in
// arrival order, until it posts some. Bounded in frames and in bytes (a
// byte ring: a 64 KiB GSO frame takes 64 KiB, a 60-byte frame 60); owned by
// the port's service thread. This is what the tun socket's queue is for
// vhost_net: a guest that refills its ring a little late loses nothing (a
// TCP flow into a slow guest otherwise retransmits heavily).

#include <cstdint>
#include <cstring>
#include <memory>

#include "dataplane/frame.hpp"

namespace xdpvhost::dataplane {

class FrameBacklog {
 public:
  // Allocated here, with the port, never on the datapath; not zeroed, so
  // its pages become resident only as frames pass through them.
  FrameBacklog(std::uint32_t max_frames, std::uint32_t max_bytes)
      : max_frames_(max_frames),
        bytes_(max_bytes),
        storage_(std::make_unique_for_overwrite<std::uint8_t[]>(max_bytes)),
        meta_(std::make_unique<Meta[]>(max_frames)) {}

  bool empty() const noexcept { return count_ == 0; }
  std::uint32_t size() const noexcept { return count_; }

  // Copies the frame in; false if the backlog is full (frames or bytes).
  bool push(const Frame& frame) {
    if (count_ == max_frames_ || frame.len > bytes_) return false;
    // Frames are stored whole: one that does not fit before the end of the
    // ring starts at its beginning (the bytes skipped are counted as used).
    std::uint32_t at = write_;
    std::uint32_t skip = 0;
    if (at + frame.len > bytes_) {
      skip = bytes_ - at;
      at = 0;
    }
    if (used_ + skip + frame.len > bytes_) return false;
    gather(frame, 0, storage_.get() + at, frame.len);
    meta_[(head_ + count_) % max_frames_] =
        Meta{at, frame.len, skip, frame.offload, frame.data_valid};
    write_ = at + frame.len;
    used_ += skip + frame.len;
    ++count_;
    return true;
  }

  // The oldest frame (valid until pop()); `span` backs it.
  Frame front(Span& span) const noexcept {
    const Meta& m = meta_[head_];
    span = Span{storage_.get() + m.offset, m.len};
    Frame f(span, m.offload);
    f.data_valid = m.data_valid;
    return f;
  }
  void pop() noexcept {
    const Meta& m = meta_[head_];
    used_ -= m.skipped + m.len;
    head_ = (head_ + 1) % max_frames_;
    if (--count_ == 0) used_ = write_ = 0;
  }
  // Forgets everything held; returns how many frames that was.
  std::uint32_t clear() noexcept {
    const std::uint32_t n = count_;
    head_ = count_ = used_ = write_ = 0;
    return n;
  }

 private:
  struct Meta {
    std::uint32_t offset;
    std::uint32_t len;
    std::uint32_t skipped;  // ring bytes left unused before it
    net::ValidatedOffload offload;
    bool data_valid;
  };
  std::uint32_t max_frames_;
  std::uint32_t bytes_;
  std::uint32_t head_ = 0;
  std::uint32_t count_ = 0;
  std::uint32_t used_ = 0;   // bytes taken, skipped ones included
  std::uint32_t write_ = 0;  // where the next frame goes
  std::unique_ptr<std::uint8_t[]> storage_;
  std::unique_ptr<Meta[]> meta_;
};

}  // namespace xdpvhost::dataplane

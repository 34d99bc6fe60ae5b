#pragma once
// Frames handed from one service thread to another: a single-producer,
// single-consumer ring of frame copies. The producer is the thread that
// switched the frame; the consumer owns the destination port.
//
// Memory orders: the producer fills a slot, then stores head with release;
// the consumer loads head with acquire before reading slots, and stores tail
// with release after it is done with them; the producer loads tail with
// acquire before reusing a slot.

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>

#include "dataplane/frame.hpp"

namespace xdpvhost::dataplane {

class Mailbox {
 public:
  static constexpr std::uint32_t kSlots = 256;
  static constexpr std::uint32_t kMaxFrame = 9216;
  // A frame cut into segments here (a GSO frame longer than a slot) takes
  // slots only beyond a reserve kept for other frames: at most kMaxShare
  // when the mailbox is empty, less as it fills. One guest's frame of up to
  // 256 segments cannot fill the mailbox that every sender on its thread
  // shares toward the destination's thread.
  static constexpr std::uint32_t kReserved = kSlots / 4;
  static constexpr std::uint32_t kMaxShare = kSlots - kReserved;

  struct Slot {
    std::uint32_t port_id;
    std::uint32_t len;
    net::ValidatedOffload offload;
    bool data_valid;
    alignas(64) std::uint8_t data[kMaxFrame];
  };

  Mailbox() : slots_(std::make_unique<Slot[]>(kSlots)) {}

  // Producer: copies the frame in; false if full (or the frame too big).
  bool push(std::uint32_t port_id, const Frame& frame) noexcept {
    const std::uint32_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) == kSlots || frame.len > kMaxFrame)
      return false;
    Slot& s = slots_[head % kSlots];
    s.port_id = port_id;
    s.len = gather(frame, 0, s.data, frame.len);
    s.offload = frame.offload;
    s.data_valid = frame.data_valid;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Producer: how many more frames fit now.
  std::uint32_t free_slots() const noexcept {
    return kSlots - (head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_acquire));
  }

  // Producer: how many slots one frame's segments may take now.
  std::uint32_t share_for_one_frame() const noexcept {
    const std::uint32_t free = free_slots();
    return free > kReserved ? free - kReserved : 0;
  }

  bool empty() const noexcept {
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_relaxed);
  }

  // Consumer: calls fn(port_id, frame) for up to `max` frames, in order;
  // returns how many it took. fn returns false to leave the frame (and
  // every later one) in the mailbox: its destination cannot take it now, and
  // it is offered again at the next drain. The producer meanwhile finds the
  // mailbox filling, and its senders wait in turn.
  template <class Fn>
  unsigned drain(unsigned max, Fn&& fn) noexcept {
    const std::uint32_t head = head_.load(std::memory_order_acquire);
    std::uint32_t tail = tail_.load(std::memory_order_relaxed);
    unsigned n = 0;
    while (tail != head && n < max) {
      Slot& s = slots_[tail % kSlots];
      const Span span{s.data, s.len};
      Frame frame(span, s.offload);
      frame.data_valid = s.data_valid;
      if (!fn(s.port_id, frame)) break;
      ++tail;
      ++n;
    }
    tail_.store(tail, std::memory_order_release);
    return n;
  }

 private:
  std::unique_ptr<Slot[]> slots_;
  alignas(64) std::atomic<std::uint32_t> head_{0};
  alignas(64) std::atomic<std::uint32_t> tail_{0};
};

}  // namespace xdpvhost::dataplane

#pragma once
// Frames handed from one service thread to another: a single-producer,
// single-consumer ring of frame copies. The producer is the thread that
// switched the frame; the consumer owns the destination port.
//
// A frame travels whole, as long as it is (a 64 KiB GSO frame too), so it
// arrives as it would on the producer's own thread: segmentation, where
// needed, is the destination port's (lib/dataplane/README.md). Frames take
// a slot each and their length in a byte ring, contiguous: kSlots frames or
// kBytes bytes at most.
//
// Memory orders: the producer fills a slot and its bytes, then stores head
// with release; the consumer loads head with acquire before reading slots
// and bytes, and stores tail with release after it is done with them; the
// producer loads tail with acquire before reusing a slot or its bytes.

#include <atomic>
#include <cstdint>
#include <memory>

#include "dataplane/frame.hpp"
#include "net/ethernet.hpp"

namespace xdpvhost::dataplane {

class Mailbox {
 public:
  static constexpr std::uint32_t kSlots = 256;
  // The longest frame: a 64 KiB IP packet with its Ethernet header and a
  // VLAN tag (what a guest sends with TSO, and what GRO makes at most).
  static constexpr std::uint32_t kMaxFrame = net::kMaxGsoFrame;
  // 256 frames of a 9000-byte MTU, or 31 of 64 KiB.
  static constexpr std::uint32_t kBytes = 2u << 20;

  struct Slot {
    std::uint32_t port_id;    // where it goes
    std::uint32_t from_port;  // the port it came from (0: none named)
    std::uint32_t offset;     // into the byte ring
    std::uint32_t len;
    net::ValidatedOffload offload;
    bool data_valid;
    bool flow_hash_known;
    std::uint32_t flow_hash_value;
  };

  // The byte ring is not written before use: pages never used stay unbacked.
  Mailbox()
      : slots_(std::make_unique<Slot[]>(kSlots)),
        bytes_(std::make_unique_for_overwrite<std::uint8_t[]>(kBytes)) {}

  // Producer: copies the frame for `port_id`, from `from_port`, in; false
  // if there is no slot or no contiguous room for it now (or it is longer
  // than kMaxFrame: never).
  bool push(std::uint32_t port_id, const Frame& frame, std::uint32_t from_port = 0) noexcept {
    if (frame.len > kMaxFrame) return false;
    const std::uint32_t head = head_.load(std::memory_order_relaxed);
    const std::uint32_t tail = tail_.load(std::memory_order_acquire);
    if (head - tail == kSlots) return false;
    std::uint32_t at = 0;
    if (!place(head, tail, frame.len, at)) return false;
    Slot& s = slots_[head % kSlots];
    s.port_id = port_id;
    s.from_port = from_port;
    s.offset = at;
    s.len = gather(frame, 0, bytes_.get() + at, frame.len);
    s.offload = frame.offload;
    s.data_valid = frame.data_valid;
    s.flow_hash_known = frame.flow_hash_known;  // the sender's route hashed a spread guest's flow
    s.flow_hash_value = frame.flow_hash_value;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  // Producer: how many more frames fit now, bytes permitting.
  std::uint32_t free_slots() const noexcept {
    return kSlots - (head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_acquire));
  }

  // Producer: whether a frame from `port_id` is still in the mailbox (the
  // producer wrote every slot between tail and head; the consumer only
  // reads them).
  bool holds_from(std::uint32_t port_id) const noexcept {
    const std::uint32_t head = head_.load(std::memory_order_relaxed);
    for (std::uint32_t t = tail_.load(std::memory_order_acquire); t != head; ++t)
      if (slots_[t % kSlots].from_port == port_id) return true;
    return false;
  }

  // Consumer: whether a frame for `port_id` is still in the mailbox.
  bool holds(std::uint32_t port_id) const noexcept {
    const std::uint32_t head = head_.load(std::memory_order_acquire);
    for (std::uint32_t t = tail_.load(std::memory_order_relaxed); t != head; ++t)
      if (slots_[t % kSlots].port_id == port_id) return true;
    return false;
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
      const Slot& s = slots_[tail % kSlots];
      const Span span{bytes_.get() + s.offset, s.len};
      Frame frame(span, s.offload);
      frame.data_valid = s.data_valid;
      frame.flow_hash_known = s.flow_hash_known;
      frame.flow_hash_value = s.flow_hash_value;
      if (!fn(s.port_id, frame)) break;
      ++tail;
      ++n;
    }
    tail_.store(tail, std::memory_order_release);
    return n;
  }

 private:
  // Producer: where `len` contiguous bytes go, after the newest frame's and
  // clear of the oldest's. The slots between tail and head are the frames in
  // the mailbox; the producer wrote them, the consumer only reads them.
  bool place(std::uint32_t head, std::uint32_t tail, std::uint32_t len,
             std::uint32_t& at) const noexcept {
    if (head == tail) {  // empty: the consumer is done with every byte
      at = 0;
      return true;
    }
    const Slot& oldest = slots_[tail % kSlots];
    const Slot& newest = slots_[(head - 1) % kSlots];
    const std::uint32_t end = newest.offset + newest.len;
    if (newest.offset >= oldest.offset) {  // in use: [oldest, end)
      if (end + len <= kBytes) {
        at = end;
        return true;
      }
      if (len <= oldest.offset) {  // wraps to the start
        at = 0;
        return true;
      }
      return false;
    }
    // Wrapped: in use [oldest, the ring's end) and [0, end).
    if (end + len <= oldest.offset) {
      at = end;
      return true;
    }
    return false;
  }

  std::unique_ptr<Slot[]> slots_;
  std::unique_ptr<std::uint8_t[]> bytes_;
  alignas(64) std::atomic<std::uint32_t> head_{0};
  alignas(64) std::atomic<std::uint32_t> tail_{0};
};

}  // namespace xdpvhost::dataplane

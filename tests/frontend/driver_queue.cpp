#include "frontend/driver_queue.hpp"

#include <poll.h>

#include <atomic>
#include <cstring>
#include <stdexcept>

namespace xdpvhost::testing {
namespace {

using virtio::Descriptor;

// Split ring field offsets (virtio 1.2, 2.7.6 and 2.7.8).
constexpr std::size_t kRingFlags = 0;
constexpr std::size_t kRingIdx = 2;
constexpr std::size_t kRingEntries = 4;

std::uint16_t load_acquire(const std::uint16_t* p) {
  return std::atomic_ref<std::uint16_t>(*const_cast<std::uint16_t*>(p))
      .load(std::memory_order_acquire);
}
void store_release(std::uint16_t* p, std::uint16_t v) {
  std::atomic_ref<std::uint16_t>(*p).store(v, std::memory_order_release);
}
std::uint16_t* u16_at(std::uint8_t* base, std::size_t off) {
  return reinterpret_cast<std::uint16_t*>(base + off);
}

}  // namespace

DriverQueue::DriverQueue(GuestMemoryArena& memory, std::uint16_t index,
                         const DriverQueueOptions& options)
    : memory_(&memory),
      index_(index),
      size_(options.size),
      event_idx_(options.event_idx),
      indirect_capacity_(options.indirect_capacity == 0 ? 1 : options.indirect_capacity) {
  if (size_ == 0 || size_ > virtio::kMaxQueueSize || (size_ & (size_ - 1)) != 0) {
    throw std::invalid_argument("queue size must be a power of two up to 32768");
  }
  // Three separate allocations: with a two-region arena they land in
  // different regions, so the backend must translate each one on its own.
  desc_gpa_ = memory.allocate(virtio::descriptor_table_bytes(size_), 4096);
  avail_gpa_ = memory.allocate(virtio::avail_ring_bytes(size_), 64);
  used_gpa_ = memory.allocate(virtio::used_ring_bytes(size_), 64);
  desc_ = memory.as<Descriptor>(desc_gpa_);
  avail_ = memory.host(avail_gpa_, virtio::avail_ring_bytes(size_));
  used_ = memory.host(used_gpa_, virtio::used_ring_bytes(size_));
  indirect_tables_.assign(size_, 0);
  reset(event_idx_);
}

std::uint16_t* DriverQueue::avail_ring() const noexcept {
  return u16_at(avail_, kRingEntries);
}
virtio::UsedElement* DriverQueue::used_ring() const noexcept {
  return reinterpret_cast<virtio::UsedElement*>(used_ + kRingEntries);
}
std::uint16_t* DriverQueue::used_event_ptr() const noexcept {
  return u16_at(avail_, kRingEntries + 2u * size_);
}
std::uint16_t* DriverQueue::avail_event_ptr() const noexcept {
  return u16_at(used_, kRingEntries + 8u * size_);
}

void DriverQueue::reset(bool event_idx) {
  event_idx_ = event_idx;
  std::memset(desc_, 0, virtio::descriptor_table_bytes(size_));
  std::memset(avail_, 0, virtio::avail_ring_bytes(size_));
  std::memset(used_, 0, virtio::used_ring_bytes(size_));
  free_.clear();
  for (std::uint32_t i = size_; i > 0; --i) free_.push_back(static_cast<std::uint16_t>(i - 1));
  chains_.assign(size_, Chain{});
  in_flight_ = 0;
  avail_idx_ = 0;
  added_since_kick_ = 0;
  last_used_ = 0;
  avail_flags_shadow_ = 0;
  device_base_ = 0;
  kicks_sent_ = 0;
  kicks_suppressed_ = 0;
  interrupts_ = 0;
  device_errors_ = 0;
  last_error_.clear();
  kick_.drain();
  call_.drain();
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

std::uint64_t DriverQueue::allocate_table(std::uint32_t entries) {
  return memory_->allocate(std::size_t{16} * entries, 16);
}

void DriverQueue::publish_head(std::uint16_t head) {
  avail_ring()[avail_idx_ % size_] = head;
  ++avail_idx_;
  ++added_since_kick_;
  // The ring entry (and the descriptors) must be visible before the index.
  store_release(u16_at(avail_, kRingIdx), avail_idx_);
}

std::optional<std::uint16_t> DriverQueue::add_chain(std::span<const BufferSegment> segments,
                                                    bool indirect) {
  if (segments.empty()) {
    last_error_ = "empty chain";
    return std::nullopt;
  }
  if (indirect) {
    if (free_.empty()) return std::nullopt;
    const std::uint16_t head = free_.back();
    free_.pop_back();
    std::uint64_t table = indirect_tables_[head];
    if (segments.size() > indirect_capacity_) {
      table = allocate_table(static_cast<std::uint32_t>(segments.size()));
    } else if (table == 0) {
      table = indirect_tables_[head] = allocate_table(indirect_capacity_);
    }
    auto* entries = memory_->as<Descriptor>(table);
    for (std::size_t i = 0; i < segments.size(); ++i) {
      const bool last = i + 1 == segments.size();
      entries[i].addr = segments[i].gpa;
      entries[i].len = segments[i].len;
      entries[i].flags =
          static_cast<std::uint16_t>((segments[i].device_writable ? Descriptor::kFlagWrite : 0) |
                                     (last ? 0 : Descriptor::kFlagNext));
      entries[i].next = static_cast<std::uint16_t>(last ? 0 : i + 1);
    }
    desc_[head].addr = table;
    desc_[head].len = static_cast<std::uint32_t>(segments.size() * sizeof(Descriptor));
    desc_[head].flags = Descriptor::kFlagIndirect;
    desc_[head].next = 0;
    Chain& chain = chains_[head];
    chain.active = true;
    chain.indirect = true;
    chain.segments.assign(segments.begin(), segments.end());
    chain.descs.assign(1, head);
    ++in_flight_;
    publish_head(head);
    return head;
  }

  if (segments.size() > free_.size()) return std::nullopt;
  std::vector<std::uint16_t> descs(segments.size());
  for (auto& d : descs) {
    d = free_.back();
    free_.pop_back();
  }
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const bool last = i + 1 == segments.size();
    Descriptor& d = desc_[descs[i]];
    d.addr = segments[i].gpa;
    d.len = segments[i].len;
    d.flags =
        static_cast<std::uint16_t>((segments[i].device_writable ? Descriptor::kFlagWrite : 0) |
                                   (last ? 0 : Descriptor::kFlagNext));
    d.next = last ? 0 : descs[i + 1];
  }
  const std::uint16_t head = descs.front();
  Chain& chain = chains_[head];
  chain.active = true;
  chain.indirect = false;
  chain.segments.assign(segments.begin(), segments.end());
  chain.descs = std::move(descs);
  ++in_flight_;
  publish_head(head);
  return head;
}

std::optional<std::uint16_t> DriverQueue::add_outbuf(std::span<const BufferSegment> segments,
                                                     bool indirect) {
  std::vector<BufferSegment> segs(segments.begin(), segments.end());
  for (auto& s : segs) s.device_writable = false;
  return add_chain(segs, indirect);
}

std::optional<std::uint16_t> DriverQueue::add_inbuf(std::span<const BufferSegment> segments,
                                                    bool indirect) {
  std::vector<BufferSegment> segs(segments.begin(), segments.end());
  for (auto& s : segs) s.device_writable = true;
  return add_chain(segs, indirect);
}

bool DriverQueue::kick_needed() const noexcept {
  // Full barrier: the avail index store must be visible before we read what
  // the device asked for (virtio 1.2, 2.7.13.3).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const std::uint16_t new_idx = avail_idx_;
  const std::uint16_t old_idx = static_cast<std::uint16_t>(avail_idx_ - added_since_kick_);
  if (event_idx_) return virtio::need_event(avail_event(), new_idx, old_idx);
  return (used_flags() & virtio::kUsedFlagNoNotify) == 0;
}

bool DriverQueue::kick() {
  const bool needed = kick_needed();
  added_since_kick_ = 0;
  if (needed) {
    notify();
  } else {
    ++kicks_suppressed_;
  }
  return needed;
}

void DriverQueue::notify() {
  kick_.notify();
  ++kicks_sent_;
}

std::uint16_t DriverQueue::used_idx() const noexcept {
  return load_acquire(u16_at(used_, kRingIdx));
}
std::uint16_t DriverQueue::used_flags() const noexcept {
  return load_acquire(u16_at(used_, kRingFlags));
}
std::uint16_t DriverQueue::avail_event() const noexcept {
  return load_acquire(avail_event_ptr());
}
std::uint16_t DriverQueue::used_event() const noexcept {
  return load_acquire(used_event_ptr());
}
std::uint16_t DriverQueue::avail_flags() const noexcept {
  return load_acquire(u16_at(avail_, kRingFlags));
}

bool DriverQueue::has_used() const noexcept {
  return used_idx() != last_used_;
}

std::optional<UsedBuffer> DriverQueue::get_used() {
  for (;;) {
    if (load_acquire(u16_at(used_, kRingIdx)) == last_used_) return std::nullopt;
    const virtio::UsedElement elem = used_ring()[last_used_ % size_];
    ++last_used_;
    if (event_idx_ && (avail_flags_shadow_ & virtio::kAvailFlagNoInterrupt) == 0) {
      // Ask for an interrupt for the next used entry, and make that store
      // visible before we read the used index again.
      store_release(used_event_ptr(), last_used_);
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
    if (elem.id >= size_ || !chains_[elem.id].active) {
      ++device_errors_;
      last_error_ = "used element names id " + std::to_string(elem.id) + ", not in flight";
      continue;
    }
    Chain& chain = chains_[elem.id];
    UsedBuffer out;
    out.id = static_cast<std::uint16_t>(elem.id);
    out.len = elem.len;
    out.indirect = chain.indirect;
    out.segments = std::move(chain.segments);
    for (std::uint16_t d : chain.descs) free_.push_back(d);
    chain = Chain{};
    --in_flight_;
    return out;
  }
}

void DriverQueue::disable_interrupts() {
  if (avail_flags_shadow_ & virtio::kAvailFlagNoInterrupt) return;
  avail_flags_shadow_ |= virtio::kAvailFlagNoInterrupt;
  if (event_idx_) {
    // The device signals only when the used index passes used_event; one
    // behind what we consumed is not reached again for 65535 entries.
    store_release(used_event_ptr(), static_cast<std::uint16_t>(last_used_ - 1));
  } else {
    store_release(u16_at(avail_, kRingFlags), avail_flags_shadow_);
  }
}

bool DriverQueue::enable_interrupts() {
  avail_flags_shadow_ &= static_cast<std::uint16_t>(~virtio::kAvailFlagNoInterrupt);
  if (event_idx_) {
    store_release(used_event_ptr(), last_used_);
  } else {
    store_release(u16_at(avail_, kRingFlags), avail_flags_shadow_);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return has_used();
}

void DriverQueue::enable_interrupts_after(std::uint16_t count) {
  avail_flags_shadow_ &= static_cast<std::uint16_t>(~virtio::kAvailFlagNoInterrupt);
  if (event_idx_) {
    const std::uint16_t n = count == 0 ? 1 : count;
    store_release(used_event_ptr(), static_cast<std::uint16_t>(last_used_ + n - 1));
  } else {
    store_release(u16_at(avail_, kRingFlags), avail_flags_shadow_);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void DriverQueue::set_used_event(std::uint16_t value) noexcept {
  store_release(used_event_ptr(), value);
}

std::uint64_t DriverQueue::drain_interrupts() {
  const std::uint64_t n = call_.drain();
  interrupts_ += n;
  return n;
}

bool DriverQueue::wait_for_interrupt(std::chrono::milliseconds timeout) {
  pollfd p{call_.get(), POLLIN, 0};
  const int r = ::poll(&p, 1, static_cast<int>(timeout.count()));
  if (r <= 0) return false;
  return drain_interrupts() > 0;
}

std::optional<std::uint16_t> DriverQueue::take_descriptor() {
  if (free_.empty()) return std::nullopt;
  const std::uint16_t d = free_.back();
  free_.pop_back();
  return d;
}

void DriverQueue::push_avail_raw(std::uint16_t head) {
  avail_ring()[avail_idx_ % size_] = head;
  ++avail_idx_;
  ++added_since_kick_;
  store_release(u16_at(avail_, kRingIdx), avail_idx_);
}

void DriverQueue::set_avail_idx_raw(std::uint16_t idx) {
  added_since_kick_ = static_cast<std::uint16_t>(added_since_kick_ + (idx - avail_idx_));
  avail_idx_ = idx;
  store_release(u16_at(avail_, kRingIdx), avail_idx_);
}

}  // namespace xdpvhost::testing

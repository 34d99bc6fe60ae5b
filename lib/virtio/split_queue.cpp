#include "virtio/split_queue.hpp"

#include <atomic>
#include <cstring>

namespace xdpvhost::virtio {
namespace {

// Ring field offsets (virtio 1.2, 2.7).
constexpr std::size_t kFlagsOffset = 0;
constexpr std::size_t kIdxOffset = 2;
constexpr std::size_t kRingOffset = 4;

// The guest writes these fields concurrently from another process; every
// access goes through atomic_ref so the compiler neither tears nor caches it.
std::atomic_ref<std::uint16_t> field16(std::uint8_t* base, std::size_t offset) {
  return std::atomic_ref<std::uint16_t>(*reinterpret_cast<std::uint16_t*>(base + offset));
}

}  // namespace

QueueError SplitQueue::attach(std::shared_ptr<const GuestMemory> memory, const Config& c) {
  detach();
  error_ = QueueError::kNone;
  // Set before any check: a ring that fails to attach still reports the base
  // it was given (GET_VRING_BASE), not the one of its previous life.
  last_avail_idx_ = c.last_avail_idx;
  avail_idx_ = c.last_avail_idx;
  if (c.size == 0 || c.size > kMaxQueueSize || (c.size & (c.size - 1)) != 0) {
    error_ = QueueError::kRingSize;
    return error_;
  }
  auto* desc = memory->translate_uva(c.desc_uva, descriptor_table_bytes(c.size));
  auto* avail = memory->translate_uva(c.avail_uva, avail_ring_bytes(c.size));
  auto* used = memory->translate_uva(c.used_uva, used_ring_bytes(c.size));
  if (desc == nullptr || avail == nullptr || used == nullptr) {
    error_ = QueueError::kRingAddress;
    return error_;
  }
  if (reinterpret_cast<std::uintptr_t>(desc) % 16 != 0 ||
      reinterpret_cast<std::uintptr_t>(avail) % 2 != 0 ||
      reinterpret_cast<std::uintptr_t>(used) % 4 != 0) {
    error_ = QueueError::kRingMisaligned;
    return error_;
  }
  log_ = c.log;
  log_used_ = c.log != nullptr && c.log_used;
  used_log_gpa_ = c.used_log_gpa;
  // The whole used ring must lie inside the log (vhost-user.rst: the bit of
  // its last byte falls within the log's size), checked once here so that
  // marking it later cannot fail.
  if (log_used_) {
    const std::uint64_t bytes = used_ring_bytes(c.size);
    const std::uint64_t last = c.used_log_gpa + bytes - 1;
    if (last < c.used_log_gpa || ((last >> DirtyLog::kPageShift) >> 3) >= c.log->size()) {
      log_.reset();
      log_used_ = false;
      error_ = QueueError::kLogOutOfRange;
      return error_;
    }
  }
  memory_ = std::move(memory);
  desc_ = desc;
  avail_ = avail;
  used_ = used;
  size_ = c.size;
  event_idx_ = c.event_idx;
  // The used index lives in guest memory; after a stop/start it is exactly
  // where we left it, after a driver reset the driver zeroed it.
  used_idx_ = field16(used_, kIdxOffset).load(std::memory_order_acquire);
  staged_ = 0;
  signalled_used_valid_ = false;
  published_unsignalled_ = false;
  visited_.assign(size_, 0);
  generation_ = 0;
  return QueueError::kNone;
}

void SplitQueue::detach() noexcept {
  memory_.reset();
  log_.reset();
  log_used_ = false;
  desc_ = avail_ = used_ = nullptr;
  size_ = 0;
  staged_ = 0;
}

std::uint16_t SplitQueue::load_avail_idx() const noexcept {
  // Acquire: ring entries and descriptors written before the driver's
  // release of avail->idx are visible to the reads that follow.
  return field16(avail_, kIdxOffset).load(std::memory_order_acquire);
}

std::uint16_t SplitQueue::available(std::uint16_t want) noexcept {
  if (!usable()) return 0;
  // The cached index is read again only when it shows fewer than `want`:
  // the driver may have made more available since.
  if (static_cast<std::uint16_t>(avail_idx_ - last_avail_idx_) < want) {
    const std::uint16_t idx = load_avail_idx();
    if (static_cast<std::uint16_t>(idx - last_avail_idx_) > size_) {
      fail(QueueError::kAvailIndexJump);
      return 0;
    }
    avail_idx_ = idx;
  }
  // Also after unpop(): the index read earlier may be a whole ring ahead of
  // where we are now; a driver never makes more than a ring available.
  const auto count = static_cast<std::uint16_t>(avail_idx_ - last_avail_idx_);
  if (count > size_) {
    fail(QueueError::kAvailIndexJump);
    return 0;
  }
  return count;
}

bool SplitQueue::pop(DescriptorChain& out, Direction direction, std::uint32_t max_bytes,
                     std::uint32_t max_descriptors) noexcept {
  out.clear();
  // The memory's file (or the dirty log's) was cut short (the SIGBUS guard
  // replaced it): nothing in it is the guest's any more.
  if ((memory_ != nullptr && memory_->truncated()) || (log_ != nullptr && log_->truncated()))
    return fail(QueueError::kMemoryTruncated);
  if (available() == 0) return false;
  const std::size_t slot = kRingOffset + 2u * (last_avail_idx_ & (size_ - 1));
  const std::uint16_t head = field16(avail_, slot).load(std::memory_order_relaxed);
  if (head >= size_) return fail(QueueError::kHeadOutOfRange);
  if (!walk(head, out, direction, max_bytes, max_descriptors)) return false;
  if (!out.truncated && out.readable_bytes == 0 && out.writable_bytes == 0)
    return fail(QueueError::kEmptyChain);
  out.head = head;
  ++last_avail_idx_;
  return true;
}

bool SplitQueue::walk(std::uint16_t head, DescriptorChain& out, Direction direction,
                      std::uint32_t max_bytes, std::uint32_t max_descriptors) noexcept {
  const std::uint8_t* table = desc_;
  std::uint32_t table_size = size_;
  bool in_indirect = false;
  std::uint32_t count = 0;
  std::uint32_t index = head;
  if (++generation_ == 0) {  // wrapped: forget every old mark
    std::fill(visited_.begin(), visited_.end(), 0);
    generation_ = 1;
  }
  for (;;) {
    if (index >= table_size) return fail(QueueError::kNextOutOfRange);
    if (visited_[index] == generation_) return fail(QueueError::kDescriptorLoop);
    visited_[index] = generation_;
    if (++count > size_) return fail(QueueError::kChainTooLong);
    if (count > kMaxChainDescriptors) return fail(QueueError::kTooManyDescriptors);
    out.descriptors = count;

    // Copy the descriptor once; only the copy is checked and used, so a
    // driver rewriting it concurrently cannot slip past the checks.
    Descriptor d;
    std::memcpy(&d, table + 16u * index, sizeof d);
    std::atomic_signal_fence(std::memory_order_seq_cst);

    if (d.flags & Descriptor::kFlagIndirect) {
      if (in_indirect) return fail(QueueError::kNestedIndirect);
      if (d.flags & Descriptor::kFlagNext) return fail(QueueError::kIndirectWithNext);
      if (d.len == 0 || d.len % 16 != 0 || d.len / 16 > size_)
        return fail(QueueError::kIndirectLength);
      const std::uint8_t* indirect = memory_->translate_gpa(d.addr, d.len);
      if (indirect == nullptr) return fail(QueueError::kBufferOutOfRange);
      table = indirect;
      table_size = d.len / 16;
      in_indirect = true;
      --count;  // the indirect descriptor itself carries no buffer
      index = 0;
      if (++generation_ == 0) {
        std::fill(visited_.begin(), visited_.end(), 0);
        generation_ = 1;
      }
      continue;
    }
    if (count > max_descriptors) {
      out.truncated = true;  // the caller's budget: the rest is not read
      return true;
    }
    if (!add_buffer(d, out, direction)) return false;
    if (!(d.flags & Descriptor::kFlagNext)) return true;
    if (out.readable_bytes > max_bytes || out.writable_bytes > max_bytes) {
      out.truncated = true;  // too big already: the rest is not read
      return true;
    }
    index = d.next;
  }
}

bool SplitQueue::add_buffer(const Descriptor& d, DescriptorChain& out,
                            Direction direction) noexcept {
  const bool writable = (d.flags & Descriptor::kFlagWrite) != 0;
  if (writable && direction == Direction::kDeviceReads)
    return fail(QueueError::kUnexpectedWritable);
  if (!writable && direction == Direction::kDeviceWrites)
    return fail(QueueError::kUnexpectedReadable);
  if (!writable && !out.writable.empty()) return fail(QueueError::kReadableAfterWritable);
  if (d.len == 0) return true;
  auto& list = writable ? out.writable : out.readable;
  if (std::uint8_t* host = memory_->translate_gpa(d.addr, d.len); host != nullptr) {
    // The whole buffer in one region, as nearly always: built in place.
    list.push_back(HostSpan{host, d.len, d.addr});
  } else {
    HostSpan* spans = span_scratch_.data();
    const int n = memory_->gpa_to_spans(d.addr, d.len, spans, kMaxSpansPerBuffer);
    if (n < 0) return fail(QueueError::kBufferOutOfRange);
    list.insert(list.end(), spans, spans + n);
  }
  (writable ? out.writable_bytes : out.readable_bytes) += d.len;
  // A chain may not describe more than 4 GiB in total.
  if (out.writable_bytes < d.len && writable) return fail(QueueError::kChainTooLong);
  if (out.readable_bytes < d.len && !writable) return fail(QueueError::kChainTooLong);
  return true;
}

void SplitQueue::add_used(std::uint16_t head, std::uint32_t len) noexcept {
  // Plain stores: the driver does not look at this entry before it observes
  // the release store of used->idx in publish_used().
  const std::size_t slot = kRingOffset + 8u * (used_idx_ & (size_ - 1));
  const UsedElement e{head, len};
  std::memcpy(used_ + slot, &e, sizeof e);
  ++used_idx_;
  ++staged_;
}

bool SplitQueue::log_writes(const DescriptorChain& chain, std::uint32_t bytes) noexcept {
  if (log_ == nullptr) return true;
  for (const HostSpan& s : chain.writable) {
    if (bytes == 0) break;
    const std::uint32_t take = s.len < bytes ? s.len : bytes;
    if (!log_->mark(s.gpa, take)) return fail(QueueError::kLogOutOfRange);
    bytes -= take;
  }
  return true;
}

void SplitQueue::log_used(std::size_t offset, std::size_t len) const noexcept {
  // In bounds by the check in attach(): offset + len <= used_ring_bytes.
  if (log_used_) log_->mark(used_log_gpa_ + offset, len);
}

void SplitQueue::log_published(std::uint16_t from, std::uint16_t count) const noexcept {
  // The elements may wrap around the end of the ring: at most two ranges.
  const std::uint32_t first = from & (size_ - 1);
  const std::uint32_t head = first + count <= size_ ? count : size_ - first;
  log_used(kRingOffset + 8u * first, 8u * head);
  if (head < count) log_used(kRingOffset, 8u * (count - head));
  log_used(kIdxOffset, 2);
}

void SplitQueue::publish_used() noexcept {
  if (staged_ == 0 || !attached()) return;
  field16(used_, kIdxOffset).store(used_idx_, std::memory_order_release);
  // Marked after the stores they stand for (DirtyLog::mark orders them).
  if (log_used_) [[unlikely]]
    log_published(static_cast<std::uint16_t>(used_idx_ - staged_), staged_);
  staged_ = 0;
  published_unsignalled_ = true;
}

bool SplitQueue::should_signal() noexcept {
  if (!published_unsignalled_ || !attached()) return false;
  published_unsignalled_ = false;
  // Full fence: our used->idx store must be visible before we read what the
  // driver asked for, or it could miss the update and we the interrupt.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!event_idx_) {
    const std::uint16_t flags = field16(avail_, kFlagsOffset).load(std::memory_order_relaxed);
    return (flags & kAvailFlagNoInterrupt) == 0;
  }
  const std::uint16_t old_idx = signalled_used_;
  const bool valid = signalled_used_valid_;
  signalled_used_ = used_idx_;
  signalled_used_valid_ = true;
  if (!valid) return true;
  const std::uint16_t used_event =
      field16(avail_, kRingOffset + 2u * size_).load(std::memory_order_relaxed);
  return need_event(used_event, used_idx_, old_idx);
}

bool SplitQueue::enable_notifications() noexcept {
  if (!usable()) return false;
  if (event_idx_) {
    field16(used_, kRingOffset + 8u * size_).store(last_avail_idx_, std::memory_order_relaxed);
    log_used(kRingOffset + 8u * size_, 2);
  } else {
    auto flags = field16(used_, kFlagsOffset);
    flags.store(flags.load(std::memory_order_relaxed) & ~kUsedFlagNoNotify,
                std::memory_order_relaxed);
    log_used(kFlagsOffset, 2);
  }
  // Full fence: the driver must see kicks are wanted before we look at
  // avail->idx again; otherwise a chain added in between is never kicked.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return available() != 0;
}

void SplitQueue::disable_notifications() noexcept {
  if (!usable() || event_idx_) return;  // with EVENT_IDX the stale avail_event suppresses kicks
  auto flags = field16(used_, kFlagsOffset);
  flags.store(flags.load(std::memory_order_relaxed) | kUsedFlagNoNotify, std::memory_order_relaxed);
  log_used(kFlagsOffset, 2);
}

}  // namespace xdpvhost::virtio

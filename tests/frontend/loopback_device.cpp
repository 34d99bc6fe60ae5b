#include "frontend/loopback_device.hpp"

#include <atomic>
#include <cstring>
#include <stdexcept>

namespace xdpvhost::testing {
namespace {

using virtio::Descriptor;

std::uint16_t load_acquire(std::uint8_t* base, std::size_t off) {
  return std::atomic_ref<std::uint16_t>(*reinterpret_cast<std::uint16_t*>(base + off))
      .load(std::memory_order_acquire);
}
void store_release(std::uint8_t* base, std::size_t off, std::uint16_t v) {
  std::atomic_ref<std::uint16_t>(*reinterpret_cast<std::uint16_t*>(base + off))
      .store(v, std::memory_order_release);
}

}  // namespace

const char* chain_error_name(ChainError e) {
  switch (e) {
    case ChainError::kNone:
      return "none";
    case ChainError::kIndexJump:
      return "index jump";
    case ChainError::kHeadOutOfRange:
      return "head out of range";
    case ChainError::kNextOutOfRange:
      return "next out of range";
    case ChainError::kLoop:
      return "loop";
    case ChainError::kTooLong:
      return "too long";
    case ChainError::kNestedIndirect:
      return "nested indirect";
    case ChainError::kIndirectBadLength:
      return "indirect bad length";
    case ChainError::kIndirectWithNext:
      return "indirect with next";
    case ChainError::kOutOfBounds:
      return "out of bounds";
    case ChainError::kReadableAfterWritable:
      return "readable after writable";
  }
  return "?";
}

std::vector<std::uint8_t> DeviceChain::readable_bytes() const {
  std::vector<std::uint8_t> out;
  for (const DeviceSegment& s : segments) {
    if (!s.writable) out.insert(out.end(), s.data, s.data + s.len);
  }
  return out;
}

std::size_t DeviceChain::writable_capacity() const {
  std::size_t n = 0;
  for (const DeviceSegment& s : segments) n += s.writable ? s.len : 0;
  return n;
}

bool DeviceChain::write(std::span<const std::uint8_t> bytes) const {
  if (bytes.size() > writable_capacity()) return false;
  std::size_t pos = 0;
  for (const DeviceSegment& s : segments) {
    if (!s.writable || pos == bytes.size()) continue;
    const std::size_t n = std::min<std::size_t>(s.len, bytes.size() - pos);
    std::memcpy(s.data, bytes.data() + pos, n);
    pos += n;
  }
  return true;
}

LoopbackDevice::LoopbackDevice(const GuestMemoryArena& memory, const DriverQueue& queue)
    : memory_(&memory), queue_(&queue), size_(queue.size()), event_idx_(queue.event_idx()) {
  // Find the rings through their frontend virtual addresses, as a backend does.
  const auto desc_uva = memory.user_addr_of(queue.desc_gpa());
  const auto avail_uva = memory.user_addr_of(queue.avail_gpa());
  const auto used_uva = memory.user_addr_of(queue.used_gpa());
  if (!desc_uva || !avail_uva || !used_uva) throw std::runtime_error("ring outside memory");
  desc_ = reinterpret_cast<Descriptor*>(
      memory.host_from_user_addr(*desc_uva, virtio::descriptor_table_bytes(size_)));
  avail_ = memory.host_from_user_addr(*avail_uva, virtio::avail_ring_bytes(size_));
  used_ = memory.host_from_user_addr(*used_uva, virtio::used_ring_bytes(size_));
  if (desc_ == nullptr || avail_ == nullptr || used_ == nullptr) {
    throw std::runtime_error("ring user address does not translate");
  }
}

std::uint16_t LoopbackDevice::pending() const {
  return static_cast<std::uint16_t>(load_acquire(avail_, 2) - last_avail_);
}

std::optional<DeviceChain> LoopbackDevice::pop(ChainError* error) {
  auto fail = [&](ChainError e) -> std::optional<DeviceChain> {
    if (error != nullptr) *error = e;
    return std::nullopt;
  };
  if (error != nullptr) *error = ChainError::kNone;
  const std::uint16_t avail = pending();
  if (avail == 0) return std::nullopt;
  if (avail > size_) return fail(ChainError::kIndexJump);
  const std::uint16_t head =
      *reinterpret_cast<std::uint16_t*>(avail_ + 4 + 2u * (last_avail_ % size_));
  ++last_avail_;
  if (head >= size_) return fail(ChainError::kHeadOutOfRange);

  DeviceChain chain;
  chain.head = head;
  const Descriptor* table = desc_;
  std::uint32_t table_len = size_;
  std::vector<bool> visited(size_, false);
  std::uint32_t count = 0;
  bool seen_writable = false;
  std::uint32_t i = head;
  for (;;) {
    if (visited[i]) return fail(ChainError::kLoop);
    visited[i] = true;
    if (++count > size_) return fail(ChainError::kTooLong);
    const Descriptor d = table[i];
    if (d.flags & Descriptor::kFlagIndirect) {
      if (chain.indirect) return fail(ChainError::kNestedIndirect);
      if (d.flags & Descriptor::kFlagNext) return fail(ChainError::kIndirectWithNext);
      if (d.len == 0 || d.len % sizeof(Descriptor) != 0) {
        return fail(ChainError::kIndirectBadLength);
      }
      const auto* t = reinterpret_cast<const Descriptor*>(memory_->host(d.addr, d.len));
      if (t == nullptr) return fail(ChainError::kOutOfBounds);
      chain.indirect = true;
      table = t;
      table_len = d.len / sizeof(Descriptor);
      visited.assign(table_len, false);
      i = 0;
      continue;
    }
    std::uint8_t* data = memory_->host(d.addr, d.len);
    if (data == nullptr) return fail(ChainError::kOutOfBounds);
    const bool writable = (d.flags & Descriptor::kFlagWrite) != 0;
    if (seen_writable && !writable) return fail(ChainError::kReadableAfterWritable);
    seen_writable = seen_writable || writable;
    chain.segments.push_back({data, d.len, writable});
    if ((d.flags & Descriptor::kFlagNext) == 0) break;
    i = d.next;
    if (i >= table_len) return fail(ChainError::kNextOutOfRange);
  }
  return chain;
}

void LoopbackDevice::push_used(std::uint16_t head, std::uint32_t len) {
  auto* elem = reinterpret_cast<virtio::UsedElement*>(used_ + 4 + 8u * (used_idx_ % size_));
  elem->id = head;
  elem->len = len;
  ++used_idx_;
}

void LoopbackDevice::publish_used() {
  store_release(used_, 2, used_idx_);
}

bool LoopbackDevice::signal_if_needed() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  bool need;
  if (event_idx_) {
    const std::uint16_t event = load_acquire(avail_, 4 + 2u * size_);
    const std::uint16_t old = signalled_used_;
    // Like vhost: the first time there is no "old", so signal.
    need = !signalled_valid_ || virtio::need_event(event, used_idx_, old);
  } else {
    need = (load_acquire(avail_, 0) & virtio::kAvailFlagNoInterrupt) == 0;
  }
  signalled_used_ = used_idx_;
  signalled_valid_ = true;
  if (need) queue_->call_fd().notify();
  return need;
}

void LoopbackDevice::set_no_notify(bool on) {
  store_release(used_, 0, on ? virtio::kUsedFlagNoNotify : 0);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void LoopbackDevice::set_avail_event(std::uint16_t value) {
  store_release(used_, 4 + 8u * size_, value);
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

std::uint64_t LoopbackDevice::drain_kicks() {
  return queue_->kick_fd().drain();
}

std::size_t LoopbackDevice::deliver_frame(std::span<const std::uint8_t> frame,
                                          virtio::NetHeader header, std::size_t header_size,
                                          bool mergeable) {
  std::vector<std::uint8_t> stream(header_size + frame.size());
  std::vector<DeviceChain> chains;
  std::vector<std::uint32_t> lens;
  std::size_t placed = 0;
  while (placed < stream.size()) {
    if (!mergeable && !chains.empty()) return 0;
    auto chain = pop();
    if (!chain) return 0;
    const std::size_t n = std::min(chain->writable_capacity(), stream.size() - placed);
    lens.push_back(static_cast<std::uint32_t>(n));
    placed += n;
    chains.push_back(std::move(*chain));
  }
  header.num_buffers = static_cast<std::uint16_t>(mergeable ? chains.size() : 1);
  std::memcpy(stream.data(), &header, header_size);
  if (!frame.empty()) std::memcpy(stream.data() + header_size, frame.data(), frame.size());
  std::size_t pos = 0;
  for (std::size_t c = 0; c < chains.size(); ++c) {
    chains[c].write(std::span<const std::uint8_t>(stream.data() + pos, lens[c]));
    pos += lens[c];
    push_used(chains[c].head, lens[c]);
  }
  publish_used();
  return chains.size();
}

}  // namespace xdpvhost::testing

#pragma once
// A driver-side view of one split ring in process memory, for unit tests of
// the device side. Guest physical == frontend virtual address here (the
// GuestMemory::wrap convention); buffers are carved from the same area.

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "virtio/guest_memory.hpp"
#include "virtio/split_queue.hpp"
#include "virtio/split_ring_layout.hpp"

namespace xdpvhost::virtio::test {

class TestRing {
 public:
  static constexpr std::uint64_t kBase = 0x100000;
  static constexpr std::uint64_t kSize = 8 << 20;

  explicit TestRing(std::uint32_t num = 8, bool event_idx = false)
      : num_(num), event_idx_(event_idx) {
    storage_.assign(kSize + 4096, 0);
    // 4 KiB aligned start for the rings.
    auto addr = reinterpret_cast<std::uintptr_t>(storage_.data());
    host_ = reinterpret_cast<std::uint8_t*>((addr + 4095) & ~std::uintptr_t{4095});
    memory = GuestMemory::wrap(host_, kBase, kSize);
    desc_gpa = kBase;
    avail_gpa = desc_gpa + descriptor_table_bytes(num);
    used_gpa = (avail_gpa + avail_ring_bytes(num) + 3) & ~std::uint64_t{3};
    heap_ = (used_gpa + used_ring_bytes(num) + 15) & ~std::uint64_t{15};
  }

  SplitQueue::Config config(std::uint16_t base = 0) const {
    SplitQueue::Config c;
    c.size = num_;
    c.desc_uva = desc_gpa;
    c.avail_uva = avail_gpa;
    c.used_uva = used_gpa;
    c.last_avail_idx = base;
    c.event_idx = event_idx_;
    return c;
  }

  std::uint8_t* host(std::uint64_t gpa) { return host_ + (gpa - kBase); }
  std::uint64_t alloc(std::uint32_t len) {
    const std::uint64_t gpa = heap_;
    heap_ = (heap_ + len + 15) & ~std::uint64_t{15};
    return gpa;
  }

  Descriptor* desc(std::uint16_t i) { return reinterpret_cast<Descriptor*>(host(desc_gpa)) + i; }
  void set_desc(std::uint16_t i, std::uint64_t addr, std::uint32_t len, std::uint16_t flags,
                std::uint16_t next = 0) {
    *desc(i) = Descriptor{addr, len, flags, next};
  }
  // Makes descriptor `head` available.
  void publish(std::uint16_t head) {
    auto* ring = reinterpret_cast<std::uint16_t*>(host(avail_gpa));
    ring[2 + (avail_idx_ % num_)] = head;
    ++avail_idx_;
    ring[1] = avail_idx_;
  }
  void set_avail_idx(std::uint16_t idx) {
    avail_idx_ = idx;
    reinterpret_cast<std::uint16_t*>(host(avail_gpa))[1] = idx;
  }
  void set_avail_flags(std::uint16_t f) {
    reinterpret_cast<std::uint16_t*>(host(avail_gpa))[0] = f;
  }
  void set_used_event(std::uint16_t e) {
    reinterpret_cast<std::uint16_t*>(host(avail_gpa))[2 + num_] = e;
  }
  std::uint16_t used_idx() { return reinterpret_cast<std::uint16_t*>(host(used_gpa))[1]; }
  std::uint16_t used_flags() { return reinterpret_cast<std::uint16_t*>(host(used_gpa))[0]; }
  std::uint16_t avail_event() {
    return *reinterpret_cast<std::uint16_t*>(host(used_gpa) + 4 + 8 * num_);
  }
  UsedElement used(std::uint16_t i) {
    UsedElement e;
    std::memcpy(&e, host(used_gpa) + 4 + 8 * (i % num_), sizeof e);
    return e;
  }

  std::shared_ptr<const GuestMemory> memory;
  std::uint64_t desc_gpa, avail_gpa, used_gpa;

 private:
  std::uint32_t num_;
  bool event_idx_;
  std::vector<std::uint8_t> storage_;
  std::uint8_t* host_;
  std::uint64_t heap_;
  std::uint16_t avail_idx_ = 0;
};

}  // namespace xdpvhost::virtio::test

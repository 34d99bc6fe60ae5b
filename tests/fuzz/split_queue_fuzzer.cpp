// Fuzz target: arbitrary ring contents -- descriptor table, avail ring,
// indirect tables, buffers -- in a small guest memory, walked by
// virtio::SplitQueue in both directions while the "driver" keeps rewriting
// bytes between operations.
//
// Input: a 12-byte ring configuration, a script of operations, then the
// initial memory image (the rest, zero padded). The memory is a heap block of
// exactly kMemory bytes wrapped by GuestMemory::wrap, so AddressSanitizer
// flags any access outside it; the target itself checks that every chain the
// queue returns lies inside guest memory and adds up.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "fuzz_bytes.hpp"
#include "virtio/descriptor_chain.hpp"
#include "virtio/guest_memory.hpp"
#include "virtio/split_queue.hpp"

namespace {

using xdpvhost::fuzz::FuzzBytes;
using xdpvhost::virtio::DescriptorChain;
using xdpvhost::virtio::GuestMemory;
using xdpvhost::virtio::HostSpan;
using xdpvhost::virtio::SplitQueue;
using Direction = SplitQueue::Direction;

constexpr std::size_t kMemory = 64 * 1024;
constexpr std::uint64_t kGpa = 0x100000;  // guest address 0 is outside memory

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "split_queue_fuzzer: invariant violated: %s\n", what);
  std::abort();
}

void check_spans(const std::vector<HostSpan>& spans, std::uint32_t total,
                 const std::uint8_t* base) {
  std::uint64_t sum = 0;
  for (const HostSpan& s : spans) {
    if (s.data < base || s.data + s.len > base + kMemory || s.len == 0)
      violated("span outside memory");
    sum += s.len;
  }
  if (sum != total) violated("span lengths do not add up to the chain's byte count");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzBytes in(data, size);
  // ---- configuration ----
  const std::uint8_t size_code = in.u8();
  SplitQueue::Config config;
  // Mostly valid sizes (1..256), sometimes anything.
  config.size = (size_code & 0x80) ? in.u16() : (1u << (size_code % 9));
  config.event_idx = (size_code & 0x40) != 0;
  config.last_avail_idx = in.u16();
  config.desc_uva = kGpa + (in.u16() & ~0xfu);
  config.avail_uva = kGpa + (in.u16() & ~0x1u);
  config.used_uva = kGpa + (in.u16() & ~0x3u);
  const std::uint8_t script_len = in.u8();
  const auto script = in.take(std::size_t{script_len} * 4);

  auto memory_block = std::make_unique<std::uint8_t[]>(kMemory);
  std::uint8_t* base = memory_block.get();
  std::memset(base, 0, kMemory);
  const auto image = in.take(kMemory);
  if (!image.empty()) std::memcpy(base, image.data(), image.size());
  auto memory = GuestMemory::wrap(base, kGpa, kMemory);

  SplitQueue q;
  if (q.attach(memory, config) != xdpvhost::virtio::QueueError::kNone) return 0;

  // ---- operations ----
  DescriptorChain chain;
  std::uint16_t last_head = 0;
  bool have_head = false;
  std::uint32_t popped = 0;
  // Chains given back with unpop() and not popped again: available() may
  // exceed the ring size by that much (an avail index read after the pops
  // is checked against the popped position; unpop moves back before it).
  std::uint32_t unpopped = 0;
  FuzzBytes ops(script.data(), script.size());
  while (!ops.empty()) {
    const std::uint8_t op = ops.u8();
    const std::uint8_t a = ops.u8();
    const std::uint16_t b = ops.u16();
    switch (op % 9) {
      case 0:
      case 1: {
        const Direction d = (op % 9) == 0 ? Direction::kDeviceReads : Direction::kDeviceWrites;
        const bool was_broken = q.broken();
        if (q.pop(chain, d)) {
          if (was_broken) violated("pop succeeded on a broken queue");
          if (chain.head >= q.size()) violated("head beyond the ring");
          check_spans(chain.readable, chain.readable_bytes, base);
          check_spans(chain.writable, chain.writable_bytes, base);
          if (d == Direction::kDeviceReads && !chain.writable.empty())
            violated("writable in a TX chain");
          if (d == Direction::kDeviceWrites && !chain.readable.empty())
            violated("readable in an RX chain");
          last_head = chain.head;
          have_head = true;
          ++popped;
          if (unpopped > 0) --unpopped;
        }
        break;
      }
      case 2:
        if (q.usable() && have_head) q.add_used(last_head, b);
        break;
      case 3:
        q.publish_used();
        (void)q.should_signal();
        break;
      case 4:
        (void)q.enable_notifications();
        break;
      case 5:
        q.disable_notifications();
        break;
      case 6:
        if (q.usable() && popped > 0 && (a & 1)) {
          q.unpop(1);
          --popped;
          ++unpopped;
        }
        break;
      case 7: {
        // The driver writes a byte meanwhile (a descriptor, an index, a table).
        base[b % kMemory] = a;
        break;
      }
      case 8: {
        const std::uint16_t avail = q.available();
        if (!q.broken() && avail > q.size() + unpopped)
          violated("more chains available than the ring holds");
        break;
      }
    }
  }
  q.publish_used();
  q.detach();
  return 0;
}

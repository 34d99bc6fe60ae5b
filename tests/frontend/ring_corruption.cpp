#include "frontend/ring_corruption.hpp"

#include <cstring>
#include <vector>

#include "frontend/frame_builder.hpp"

namespace xdpvhost::testing {
namespace {

using virtio::Descriptor;

constexpr std::uint32_t kBufferBytes = 2048;

bool device_writes(const DriverQueue& q) {
  return q.index() % 2 == 0;
}

std::uint16_t data_flags(const DriverQueue& q) {
  return device_writes(q) ? Descriptor::kFlagWrite : 0;
}

// A buffer holding a zero 12-byte virtio-net header and a 60-byte frame to an
// unknown unicast MAC (nothing a switch would flood).
std::uint64_t valid_buffer(DriverQueue& q) {
  const std::uint64_t gpa = q.memory().allocate(kBufferBytes, 64);
  std::uint8_t* p = q.memory().host(gpa, kBufferBytes);
  std::memset(p, 0, kBufferBytes);
  const auto frame = build_ethernet(make_mac(0xdead), make_mac(0xbeef), 0x88b5,
                                    std::vector<std::uint8_t>(46, 0x5a));
  std::memcpy(p + 12, frame.data(), frame.size());
  return gpa;
}

void set(Descriptor& d, std::uint64_t addr, std::uint32_t len, std::uint16_t flags,
         std::uint16_t next) {
  d.addr = addr;
  d.len = len;
  d.flags = flags;
  d.next = next;
}

std::optional<std::uint16_t> single(DriverQueue& q, std::uint64_t addr, std::uint32_t len,
                                    std::uint16_t flags) {
  auto d = q.take_descriptor();
  if (!d) return std::nullopt;
  set(q.descriptors()[*d], addr, len, flags, 0);
  q.push_avail_raw(*d);
  return d;
}

}  // namespace

std::optional<std::uint16_t> publish_descriptor_loop(DriverQueue& q) {
  auto a = q.take_descriptor();
  auto b = q.take_descriptor();
  if (!a || !b) return std::nullopt;
  const std::uint64_t buf = valid_buffer(q);
  const std::uint16_t flags = data_flags(q) | Descriptor::kFlagNext;
  set(q.descriptors()[*a], buf, 64, flags, *b);
  set(q.descriptors()[*b], buf + 64, 64, flags, *a);
  q.push_avail_raw(*a);
  return a;
}

std::optional<std::uint16_t> publish_ring_cycle(DriverQueue& q) {
  std::vector<std::uint16_t> ds;
  while (auto d = q.take_descriptor()) ds.push_back(*d);
  if (ds.size() < 2) return std::nullopt;
  const std::uint64_t buf = valid_buffer(q);
  const std::uint16_t flags = data_flags(q) | Descriptor::kFlagNext;
  // One byte per descriptor: the whole cycle stays below any frame limit, so
  // the device walks into the loop (a transmit walk stops at the frame limit
  // and would see an oversize chain instead).
  for (std::size_t i = 0; i < ds.size(); ++i) {
    set(q.descriptors()[ds[i]], buf + (i % 32) * 64, 1, flags, ds[(i + 1) % ds.size()]);
  }
  q.push_avail_raw(ds[0]);
  return ds[0];
}

std::optional<std::uint16_t> publish_indirect_chain_longer_than_ring(DriverQueue& q) {
  auto head = q.take_descriptor();
  if (!head) return std::nullopt;
  const std::uint32_t n = q.size() + 1u;
  const std::uint64_t table = q.allocate_table(n);
  auto* entries = q.memory().as<Descriptor>(table);
  const std::uint64_t buf = valid_buffer(q);
  for (std::uint32_t i = 0; i < n; ++i) {
    const bool last = i + 1 == n;
    set(entries[i], buf + (i % 256) * 8, 8,
        static_cast<std::uint16_t>(data_flags(q) | (last ? 0 : Descriptor::kFlagNext)),
        static_cast<std::uint16_t>(last ? 0 : i + 1));
  }
  set(q.descriptors()[*head], table, n * 16, Descriptor::kFlagIndirect, 0);
  q.push_avail_raw(*head);
  return head;
}

std::optional<std::uint16_t> publish_nested_indirect(DriverQueue& q) {
  auto head = q.take_descriptor();
  if (!head) return std::nullopt;
  const std::uint64_t buf = valid_buffer(q);
  const std::uint64_t inner = q.allocate_table(1);
  set(q.memory().as<Descriptor>(inner)[0], buf + 128, 64, data_flags(q), 0);
  const std::uint64_t outer = q.allocate_table(2);
  auto* entries = q.memory().as<Descriptor>(outer);
  set(entries[0], buf, 64, data_flags(q) | Descriptor::kFlagNext, 1);
  set(entries[1], inner, 16, Descriptor::kFlagIndirect, 0);
  set(q.descriptors()[*head], outer, 32, Descriptor::kFlagIndirect, 0);
  q.push_avail_raw(*head);
  return head;
}

std::optional<std::uint16_t> publish_indirect_bad_length(DriverQueue& q, std::uint32_t len) {
  const std::uint64_t buf = valid_buffer(q);
  const std::uint64_t table = q.allocate_table(4);
  auto* entries = q.memory().as<Descriptor>(table);
  for (std::uint16_t i = 0; i < 4; ++i) {
    set(entries[i], buf + i * 64u, 64,
        static_cast<std::uint16_t>(data_flags(q) | (i < 3 ? Descriptor::kFlagNext : 0)),
        static_cast<std::uint16_t>(i < 3 ? i + 1 : 0));
  }
  return single(q, table, len, Descriptor::kFlagIndirect);
}

std::optional<std::uint16_t> publish_indirect_table_outside_memory(DriverQueue& q) {
  return single(q, q.memory().gpa_past_end(), 32, Descriptor::kFlagIndirect);
}

std::optional<std::uint16_t> publish_address_outside_memory(DriverQueue& q, OutsideMemory where) {
  GuestMemoryArena& mem = q.memory();
  switch (where) {
    case OutsideMemory::kPastEnd:
      return single(q, mem.gpa_past_end(), 64, data_flags(q));
    case OutsideMemory::kInHole:
      return single(q, mem.gpa_in_hole(), 64, data_flags(q));
    case OutsideMemory::kStraddlesEnd:
      return single(q, mem.region_last_gpa(0) - 31, 64, data_flags(q));
    case OutsideMemory::kHugeLength:
      return single(q, valid_buffer(q), 0xffffffffu, data_flags(q));
    case OutsideMemory::kWrapsAround:
      return single(q, 0xffff'ffff'ffff'ffc0ull, 128, data_flags(q));
  }
  return std::nullopt;
}

void publish_avail_index_jump(DriverQueue& q, std::uint32_t jump) {
  const std::uint32_t n = jump == 0 ? q.size() + 1u : jump;
  q.set_avail_idx_raw(static_cast<std::uint16_t>(q.avail_idx() + n));
}

void publish_head_out_of_range(DriverQueue& q, std::optional<std::uint16_t> head) {
  q.push_avail_raw(head.value_or(q.size()));
}

std::optional<std::uint16_t> publish_indirect_with_next(DriverQueue& q) {
  auto head = q.take_descriptor();
  auto tail = q.take_descriptor();
  if (!head || !tail) return std::nullopt;
  const std::uint64_t buf = valid_buffer(q);
  const std::uint64_t table = q.allocate_table(1);
  set(q.memory().as<Descriptor>(table)[0], buf, 64, data_flags(q), 0);
  set(q.descriptors()[*head], table, 16, Descriptor::kFlagIndirect | Descriptor::kFlagNext, *tail);
  set(q.descriptors()[*tail], buf + 64, 64, data_flags(q), 0);
  q.push_avail_raw(*head);
  return head;
}

std::optional<std::uint16_t> publish_next_out_of_range(DriverQueue& q) {
  auto d = q.take_descriptor();
  if (!d) return std::nullopt;
  set(q.descriptors()[*d], valid_buffer(q), 64, data_flags(q) | Descriptor::kFlagNext, q.size());
  q.push_avail_raw(*d);
  return d;
}

std::optional<std::uint16_t> publish_readable_after_writable(DriverQueue& q) {
  auto a = q.take_descriptor();
  auto b = q.take_descriptor();
  if (!a || !b) return std::nullopt;
  const std::uint64_t buf = valid_buffer(q);
  set(q.descriptors()[*a], buf, 64, Descriptor::kFlagWrite | Descriptor::kFlagNext, *b);
  set(q.descriptors()[*b], buf + 64, 64, 0, 0);
  q.push_avail_raw(*a);
  return a;
}

}  // namespace xdpvhost::testing

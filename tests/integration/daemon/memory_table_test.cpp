// Memory tables that do not match the fds they come with.
//
// A frontend that describes a region larger than its memfd must get the
// table refused (GuestMemory::map() checks the fd's size and seals it against
// shrinking): otherwise the first guest address beyond the end of the file
// the datapath touches raises SIGBUS and the whole daemon dies -- every other
// port with it.

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "daemon_test.hpp"
#include "guest_traffic.hpp"
#include "sys/event_fd.hpp"
#include "virtio/features.hpp"

namespace xdpvhost::integration {
namespace {

namespace vu = fe::vhost_user;

const fe::MacAddress kMacVm = fe::make_mac(1);
const fe::MacAddress kMacA = fe::make_mac(2);
const fe::MacAddress kMacB = fe::make_mac(3);

std::vector<std::uint8_t> one_region_table(const vu::MemoryRegion& r) {
  std::vector<std::uint8_t> p(8 + 32);
  const vu::MemoryTableHead head{1, 0};
  std::memcpy(p.data(), &head, 8);
  std::memcpy(p.data() + 8, &r, 32);
  return p;
}

class MemoryTable : public DaemonTest {};

TEST_F(MemoryTable, RegionLargerThanItsFdNeverKillsTheDaemon) {
  start_daemon({port("vm", 1), port("a", 2), port("b", 3)});
  auto vm = connect_guest("vm");
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  ASSERT_TRUE(vm);
  const auto& r0 = vm->memory().regions()[0];
  ASSERT_EQ(vm->memory().regions().size(), 1u);
  // Twice the memfd's size.
  const vu::MemoryRegion big{r0.guest_phys_addr, 2 * r0.size, r0.user_addr, r0.mmap_offset};
  const int fd = vm->memory().fd();
  const auto ack = vm->channel().send_raw_await_ack(vu::to_u32(vu::Request::kSetMemTable),
                                                    one_region_table(big), {&fd, 1});
  ASSERT_TRUE(ack.has_value()) << vm->channel().last_error();
  if (*ack == 0) {
    // Accepted: a transmit chain in the part of the region the fd does not back.
    const std::uint64_t beyond = r0.guest_phys_addr + r0.size + (r0.size / 2);
    const fe::BufferSegment seg{beyond, 128, false};
    ASSERT_TRUE(vm->tx_queue().add_outbuf({&seg, 1}).has_value());
    vm->tx_queue().notify();
    // Refused then, or the queue broken -- but never the daemon gone.
    EXPECT_TRUE(wait_until([&] {
      try {
        const auto q = queue_of("vm", 1);
        return q.is_object() && q.at("state") == "broken";
      } catch (const RpcFailure&) {
        return !daemon().running();
      }
    }));
  }
  ASSERT_TRUE(daemon().running()) << "BUG: xdpvhostd died (status "
                                  << daemon().exit_status().value_or(-1)
                                  << ") after a SET_MEM_TABLE region larger than its fd";
  EXPECT_TRUE(exchange(*a, kMacA, *b, kMacB, 10, 0));
}

TEST_F(MemoryTable, RingBeyondTheEndOfTheFdNeverKillsTheDaemon) {
  start_daemon({port("vm", 1), port("a", 2), port("b", 3)});
  auto vm = open_guest("vm");
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  ASSERT_TRUE(vm);
  auto& ch = vm->channel();
  ASSERT_TRUE(ch.get_features());
  ASSERT_TRUE(ch.get_protocol_features());
  ASSERT_TRUE(ch.set_protocol_features(vu::bit(vu::ProtocolFeature::kReplyAck)));
  ch.set_reply_ack(true);
  ASSERT_TRUE(ch.set_owner());
  ASSERT_TRUE(ch.set_features(virtio::bit(virtio::Feature::kVersion1) |
                              virtio::bit(virtio::Feature::kVhostUserProtocolFeatures)));
  const auto& r0 = vm->memory().regions()[0];
  const vu::MemoryRegion big{r0.guest_phys_addr, 2 * r0.size, r0.user_addr, r0.mmap_offset};
  const int fd = vm->memory().fd();
  const auto ack =
      ch.send_raw_await_ack(vu::to_u32(vu::Request::kSetMemTable), one_region_table(big), {&fd, 1});
  ASSERT_TRUE(ack.has_value()) << ch.last_error();
  if (*ack == 0) {
    // A TX ring whose used ring lies beyond the end of the memfd: the daemon
    // reads used->idx when it starts the ring.
    const std::uint64_t beyond = r0.user_addr + r0.size + 4096;
    vu::VringAddr addr{};
    addr.index = 1;
    addr.desc_user_addr = r0.user_addr + 0x10000;
    addr.avail_user_addr = r0.user_addr + 0x20000;
    addr.used_user_addr = beyond;
    sys::EventFd kick;
    ASSERT_TRUE(ch.set_vring_num(1, 256));
    ASSERT_TRUE(ch.set_vring_base(1, 0));
    ASSERT_TRUE(ch.set_vring_addr(addr));
    ch.set_vring_kick(1, kick.get());
    ch.set_vring_enable(1, true);  // the ring starts here
    kick.notify();
    // Refused, or that ring broken -- but never the daemon gone.
    EXPECT_TRUE(wait_until([&] {
      try {
        const auto q = queue_of("vm", 1);
        return q.is_object() && (q.at("state") == "broken" || q.at("state") == "stopped");
      } catch (const RpcFailure&) {
        return !daemon().running();
      }
    }));
  }
  ASSERT_TRUE(daemon().running())
      << "BUG: xdpvhostd died (status " << daemon().exit_status().value_or(-1)
      << ") starting a ring that lies beyond the end of its region's fd";
  EXPECT_TRUE(exchange(*a, kMacA, *b, kMacB, 10, 0));
}

}  // namespace
}  // namespace xdpvhost::integration

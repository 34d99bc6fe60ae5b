// Every malformed ring of tests/frontend/ring_corruption.hpp, on a guest's
// transmit ring and on its receive ring: that queue breaks (port.get names
// the error, the port is reported broken, the SET_VRING_ERR eventfd fires),
// the daemon keeps running and keeps switching for the other ports, and a
// device reset by the guest makes the port work again.

#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "daemon_test.hpp"
#include "frontend/ring_corruption.hpp"
#include "guest_traffic.hpp"
#include "sys/event_fd.hpp"

namespace xdpvhost::integration {
namespace {

const fe::MacAddress kMacVictim = fe::make_mac(1);
const fe::MacAddress kMacA = fe::make_mac(2);
const fe::MacAddress kMacB = fe::make_mac(3);

enum class Ring { kTx, kRx };

struct Corruption {
  const char* name;
  std::function<bool(fe::DriverQueue&)> publish;
  const char* tx_error;  // port.get's error for a broken transmit ring
  const char* rx_error;  // ... and for a broken receive ring
  bool two_regions = false;
};

template <class F>
std::function<bool(fe::DriverQueue&)> opt(F f) {
  return [f](fe::DriverQueue& q) { return f(q).has_value(); };
}

std::vector<Corruption> corruptions() {
  using fe::OutsideMemory;
  auto outside = [](OutsideMemory where) {
    return [where](fe::DriverQueue& q) {
      return fe::publish_address_outside_memory(q, where).has_value();
    };
  };
  return {
      {"DescriptorLoop", opt(fe::publish_descriptor_loop), "descriptor_loop", "descriptor_loop"},
      {"RingCycle", opt(fe::publish_ring_cycle), "descriptor_loop", "descriptor_loop"},
      // A table of size()+1 entries: longer than the ring, refused by its length.
      {"IndirectChainLongerThanRing", opt(fe::publish_indirect_chain_longer_than_ring),
       "indirect_length", "indirect_length"},
      {"NestedIndirect", opt(fe::publish_nested_indirect), "nested_indirect", "nested_indirect"},
      {"IndirectBadLength",
       [](fe::DriverQueue& q) { return fe::publish_indirect_bad_length(q, 17).has_value(); },
       "indirect_length", "indirect_length"},
      {"IndirectZeroLength",
       [](fe::DriverQueue& q) { return fe::publish_indirect_bad_length(q, 0).has_value(); },
       "indirect_length", "indirect_length"},
      {"IndirectTableOutsideMemory", opt(fe::publish_indirect_table_outside_memory),
       "buffer_out_of_range", "buffer_out_of_range"},
      {"AddressPastEnd", outside(OutsideMemory::kPastEnd), "buffer_out_of_range",
       "buffer_out_of_range"},
      {"AddressInHole", outside(OutsideMemory::kInHole), "buffer_out_of_range",
       "buffer_out_of_range", true},
      {"AddressStraddlesRegionEnd", outside(OutsideMemory::kStraddlesEnd), "buffer_out_of_range",
       "buffer_out_of_range", true},
      {"AddressHugeLength", outside(OutsideMemory::kHugeLength), "buffer_out_of_range",
       "buffer_out_of_range"},
      {"AddressWrapsAround", outside(OutsideMemory::kWrapsAround), "buffer_out_of_range",
       "buffer_out_of_range"},
      {"AvailIndexJump",
       [](fe::DriverQueue& q) {
         fe::publish_avail_index_jump(q);
         return true;
       },
       "avail_index_jump", "avail_index_jump"},
      {"HeadOutOfRange",
       [](fe::DriverQueue& q) {
         fe::publish_head_out_of_range(q);
         return true;
       },
       "head_out_of_range", "head_out_of_range"},
      {"IndirectWithNext", opt(fe::publish_indirect_with_next), "indirect_with_next",
       "indirect_with_next"},
      {"NextOutOfRange", opt(fe::publish_next_out_of_range), "next_out_of_range",
       "next_out_of_range"},
      // A writable descriptor followed by a readable one: on a transmit ring
      // the writable one is already wrong, on a receive ring the readable one.
      {"ReadableAfterWritable", opt(fe::publish_readable_after_writable), "unexpected_writable",
       "unexpected_readable"},
  };
}

struct Param {
  Corruption corruption;
  Ring ring;
};

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.corruption.name << (p.ring == Ring::kTx ? " on the TX ring" : " on the RX ring");
}

std::vector<Param> params() {
  std::vector<Param> v;
  for (const auto& c : corruptions()) {
    v.push_back({c, Ring::kTx});
    v.push_back({c, Ring::kRx});
  }
  return v;
}

class RingCorruption : public DaemonTest, public ::testing::WithParamInterface<Param> {};

TEST_P(RingCorruption, BreaksOnlyThatQueueUntilTheGuestResetsTheDevice) {
  const Corruption& c = GetParam().corruption;
  const bool tx = GetParam().ring == Ring::kTx;
  const std::uint32_t vring = tx ? 1 : 0;
  const char* expected_error = tx ? c.tx_error : c.rx_error;

  start_daemon({port("victim", 1), port("a", 2), port("b", 3)});
  fe::ArenaOptions mem;
  mem.two_regions = c.two_regions;
  auto victim = connect_guest("victim", {}, mem);
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  ASSERT_TRUE(victim);
  // The victim works before it misbehaves (its receive ring stays empty so
  // the broken chain is the first one the daemon finds there).
  ASSERT_TRUE(stream(*victim, *a, {numbered_frame(kMacA, kMacVictim, 1)}));
  ASSERT_TRUE(tx_drained(*victim));

  fe::DriverQueue& q = tx ? victim->tx_queue() : victim->rx_queue();
  ASSERT_TRUE(c.publish(q)) << "could not publish the malformed ring";
  q.notify();
  if (!tx) {
    // A receive ring is only read when a frame is delivered to it.
    ASSERT_TRUE(send_frames(*a, {numbered_frame(kMacVictim, kMacA, 2)}));
  }

  ASSERT_TRUE(wait_until([&] {
    auto qj = queue_of("victim", vring);
    return qj.is_object() && qj.at("state") == "broken";
  })) << port_get("victim").dump();
  const auto broken = queue_of("victim", vring);
  EXPECT_EQ(broken.value("error", ""), expected_error) << broken.dump();
  EXPECT_EQ(port_state("victim"), "broken");
  // The other ring of the victim is not broken.
  const auto other = queue_of("victim", vring ^ 1);
  ASSERT_TRUE(other.is_object());
  EXPECT_NE(other.at("state"), "broken") << other.dump();
  // SET_VRING_ERR's eventfd was signalled.
  std::uint64_t err_signals = 0;
  EXPECT_TRUE(wait_until([&] {
    err_signals += victim->error_signals(static_cast<std::uint16_t>(vring));
    return err_signals > 0;
  })) << "SET_VRING_ERR eventfd of vring "
      << vring << " not signalled";
  if (!tx) {
    EXPECT_GE(drops("victim", "queue_broken"), 1u) << stats("victim").dump();
  }
  EXPECT_TRUE(daemon().running());

  // Nobody else notices.
  EXPECT_TRUE(exchange(*a, kMacA, *b, kMacB, 40, 100));
  EXPECT_EQ(port_state("a"), "running");
  EXPECT_EQ(port_state("b"), "running");
  // Frames for a broken receive ring are dropped and counted, nothing else.
  if (!tx) {
    const auto before = drops("victim", "queue_broken");
    ASSERT_TRUE(send_frames(*a, {numbered_frame(kMacVictim, kMacA, 3)}));
    EXPECT_TRUE(wait_until([&] { return drops("victim", "queue_broken") == before + 1; }));
  }
  // Still broken: it stays so until the guest resets the device.
  EXPECT_EQ(port_state("victim"), "broken");

  ASSERT_TRUE(victim->reset_and_renegotiate()) << victim->last_error();
  EXPECT_TRUE(wait_until([&] { return port_state("victim") == "running"; }))
      << port_get("victim").dump();
  const auto detail = port_get("victim");
  for (const auto& qj : detail.at("queues")) {
    EXPECT_EQ(qj.at("state"), "enabled") << qj.dump();
    EXPECT_FALSE(qj.contains("error")) << qj.dump();
  }
  post_rx(*victim);
  EXPECT_TRUE(exchange(*victim, kMacVictim, *a, kMacA, 40, 200));
  EXPECT_TRUE(exchange(*a, kMacA, *b, kMacB, 10, 300));
  EXPECT_EQ(victim->error_signals(static_cast<std::uint16_t>(vring)), 0u);
}

INSTANTIATE_TEST_SUITE_P(Daemon, RingCorruption, ::testing::ValuesIn(params()),
                         [](const auto& info) {
                           return std::string(info.param.corruption.name) +
                                  (info.param.ring == Ring::kTx ? "_Tx" : "_Rx");
                         });

// ---- rings the daemon cannot use from the start ------------------------------------

struct BadAddress {
  const char* name;
  std::function<std::uint64_t(fe::Frontend&)> desc_uva;  // where the descriptor table is said to be
  const char* error;
};

void PrintTo(const BadAddress& b, std::ostream* os) {
  *os << b.name;
}

class BadRingAddress : public DaemonTest, public ::testing::WithParamInterface<BadAddress> {};

TEST_P(BadRingAddress, BreaksTheQueueUntilTheGuestResetsTheDevice) {
  start_daemon({port("victim", 1), port("a", 2)});
  auto victim = connect_guest("victim");
  auto a = connect_receiving_guest("a");
  ASSERT_TRUE(victim);
  auto& tx = victim->tx_queue();
  fe::vhost_user::VringAddr addr{};
  addr.index = 1;
  addr.desc_user_addr = GetParam().desc_uva(*victim);
  addr.avail_user_addr = *victim->memory().user_addr_of(tx.avail_gpa());
  addr.used_user_addr = *victim->memory().user_addr_of(tx.used_gpa());
  ASSERT_TRUE(victim->channel().set_vring_addr(addr)) << victim->channel().last_error();
  ASSERT_TRUE(wait_until([&] {
    auto q = queue_of("victim", 1);
    return q.is_object() && q.at("state") == "broken";
  })) << port_get("victim").dump();
  EXPECT_EQ(queue_of("victim", 1).value("error", ""), GetParam().error);
  EXPECT_EQ(port_state("victim"), "broken");
  std::uint64_t err_signals = 0;
  EXPECT_TRUE(wait_until([&] {
    err_signals += victim->error_signals(1);
    return err_signals > 0;
  }));
  ASSERT_TRUE(victim->reset_and_renegotiate()) << victim->last_error();
  EXPECT_EQ(port_state("victim"), "running");
  post_rx(*victim);
  EXPECT_TRUE(exchange(*victim, kMacVictim, *a, kMacA, 20, 0));
}

std::uint64_t desc_uva(fe::Frontend& g) {
  return *g.memory().user_addr_of(g.tx_queue().desc_gpa());
}
std::uint64_t memory_end_uva(fe::Frontend& g) {
  const auto& r = g.memory().regions().back();
  return r.user_addr + r.size;
}

INSTANTIATE_TEST_SUITE_P(
    Daemon, BadRingAddress,
    ::testing::Values(BadAddress{"DescriptorTableOutsideMemory",
                                 [](fe::Frontend& g) { return memory_end_uva(g) + (1ull << 30); },
                                 "ring_address"},
                      BadAddress{"DescriptorTableStraddlesTheEnd",
                                 [](fe::Frontend& g) { return memory_end_uva(g) - 2048; },
                                 "ring_address"},
                      BadAddress{"DescriptorTableMisaligned",
                                 [](fe::Frontend& g) { return desc_uva(g) + 8; },
                                 "ring_misaligned"}),
    [](const auto& info) { return std::string(info.param.name); });

// SET_VRING_ERR may come at any time (vhost-user.rst sets no order; the
// kernel's vhost swaps the error eventfd of a live ring). A ring that breaks
// afterwards signals the fd it was given last, not an earlier one.
// (The device restarts the ring with the new fd, as it does for a new call
// fd.) The frontend waits for the ack of SET_VRING_ERR before it breaks the
// ring: without it, the ring could break before the message was read.
class ErrorEventfd : public DaemonTest {};

TEST_F(ErrorEventfd, ReplacedWhileTheRingRunsIsTheOneSignalled) {
  start_daemon({port("victim", 1), port("a", 2)});
  auto victim = connect_guest("victim");
  auto a = connect_guest("a");
  ASSERT_TRUE(victim && a);
  sys::EventFd replacement;
  victim->channel().set_ack_all(true);
  ASSERT_TRUE(victim->channel().set_vring_err(1, replacement.get()))
      << victim->channel().last_error();
  victim->channel().set_ack_all(false);
  ASSERT_TRUE(fe::publish_descriptor_loop(victim->tx_queue()));
  victim->tx_queue().notify();
  ASSERT_TRUE(wait_until([&] {
    auto q = queue_of("victim", 1);
    return q.is_object() && q.at("state") == "broken";
  }));
  std::uint64_t signals = 0;
  EXPECT_TRUE(wait_until([&] {
    signals += replacement.drain();
    return signals > 0;
  })) << "the error eventfd given with SET_VRING_ERR after the ring started was not signalled";
  EXPECT_EQ(victim->error_signals(1), 0u) << "the replaced error eventfd was signalled";
}

}  // namespace
}  // namespace xdpvhost::integration

// Counters against what the frontends really moved: packets and bytes both
// ways, kicks and interrupts (exactly what the eventfds carried), signal
// batching and suppression, and service threads in pure event mode and with
// busy polling losing nothing over thousands of request/response exchanges.

#include <gtest/gtest.h>

#include <numeric>
#include <ostream>
#include <string>
#include <vector>

#include "daemon_test.hpp"
#include "guest_traffic.hpp"
#include "virtio/features.hpp"

namespace xdpvhost::integration {
namespace {

const fe::MacAddress kMacA = fe::make_mac(1);
const fe::MacAddress kMacB = fe::make_mac(2);

std::uint64_t bytes_of(const std::vector<Bytes>& frames) {
  return std::accumulate(frames.begin(), frames.end(), std::uint64_t{0},
                         [](std::uint64_t n, const Bytes& f) { return n + f.size(); });
}

// Every call eventfd signal the guest got so far (drained now).
std::uint64_t guest_interrupts(fe::Frontend& g) {
  std::uint64_t n = g.stale_call_signals();
  for (std::uint16_t p = 0; p < g.queue_pairs(); ++p) {
    g.rx_queue(p).drain_interrupts();
    g.tx_queue(p).drain_interrupts();
    n += g.rx_queue(p).interrupts() + g.tx_queue(p).interrupts();
  }
  return n;
}

// The daemon's kick counter against the kick eventfd writes of a guest: the
// transmit rings' kicks always count; receive rings' kicks count too when the
// daemon waits on them (to deliver frames it held for want of buffers).
::testing::AssertionResult kicks_match(std::uint64_t counted, fe::Frontend& g) {
  std::uint64_t tx = 0, rx = 0;
  for (std::uint16_t p = 0; p < g.queue_pairs(); ++p) {
    tx += g.tx_queue(p).kicks_sent();
    rx += g.rx_queue(p).kicks_sent();
  }
  if (counted == tx || counted == tx + rx) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << counted << " kicks counted, the guest kicked " << tx
                                       << " times on TX and " << rx << " on RX";
}

class Counters : public DaemonTest, public ::testing::WithParamInterface<bool> {};

TEST_P(Counters, PacketsBytesKicksAndInterruptsMatchTheFrontends) {
  const bool event_idx = GetParam();
  start_daemon({port("a", 1), port("b", 2)}, {{"busy_poll_us", 0}});
  fe::NegotiateOptions o;
  o.event_idx = event_idx;
  auto a = connect_receiving_guest("a", o);
  auto b = connect_receiving_guest("b", o);
  std::vector<Bytes> ab, ba;
  for (std::uint32_t i = 0; i < 500; ++i)
    ab.push_back(numbered_frame(kMacB, kMacA, i, 18 + (i * 31) % 1455));
  for (std::uint32_t i = 0; i < 333; ++i)
    ba.push_back(numbered_frame(kMacA, kMacB, 9000 + i, 18 + (i * 17) % 1455));
  ASSERT_TRUE(stream(*a, *b, ab));
  ASSERT_TRUE(stream(*b, *a, ba));
  ASSERT_TRUE(tx_drained(*a));
  ASSERT_TRUE(tx_drained(*b));

  const auto sa = stats("a");
  const auto sb = stats("b");
  EXPECT_EQ(sa.at("rx_packets"), ab.size());
  EXPECT_EQ(sa.at("rx_bytes"), bytes_of(ab));
  EXPECT_EQ(sa.at("tx_packets"), ba.size());
  EXPECT_EQ(sa.at("tx_bytes"), bytes_of(ba));
  EXPECT_EQ(sb.at("rx_packets"), ba.size());
  EXPECT_EQ(sb.at("rx_bytes"), bytes_of(ba));
  EXPECT_EQ(sb.at("tx_packets"), ab.size());
  EXPECT_EQ(sb.at("tx_bytes"), bytes_of(ab));
  for (const auto* s : {&sa, &sb})
    for (const auto& [reason, n] : s->at("drops").items()) EXPECT_EQ(n, 0) << reason;

  // Kicks: exactly the TX kick eventfd writes (the daemon reads them before
  // it sleeps, and it sleeps once the traffic stops).
  EXPECT_GT(a->tx_queue().kicks_sent(), 0u);
  EXPECT_TRUE(wait_until([&] { return kicks_match(counter("a", "kicks"), *a); }))
      << kicks_match(counter("a", "kicks"), *a).message();
  EXPECT_TRUE(wait_until([&] { return kicks_match(counter("b", "kicks"), *b); }))
      << kicks_match(counter("b", "kicks"), *b).message();
  // Interrupts: exactly the call eventfd writes the guests saw.
  EXPECT_TRUE(wait_until([&] { return counter("a", "interrupts") == guest_interrupts(*a); }))
      << counter("a", "interrupts") << " counted, guest saw " << guest_interrupts(*a);
  EXPECT_TRUE(wait_until([&] { return counter("b", "interrupts") == guest_interrupts(*b); }))
      << counter("b", "interrupts") << " counted, guest saw " << guest_interrupts(*b);
  EXPECT_GT(counter("a", "interrupts"), 0u);
  // Every used-ring publication is either signalled or suppressed, and at
  // most signal_batch (32) entries go into one.
  for (const char* name : {"a", "b"}) {
    const auto s = stats(name);
    const std::uint64_t decisions = s.at("interrupts").get<std::uint64_t>() +
                                    s.at("interrupts_suppressed").get<std::uint64_t>();
    const std::uint64_t used =
        s.at("rx_packets").get<std::uint64_t>() + s.at("tx_packets").get<std::uint64_t>();
    EXPECT_GE(decisions, (used + 31) / 32) << name;
    EXPECT_LE(decisions, used) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Daemon, Counters, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "EventIdx" : "NoEventIdx"; });

class SignalBatch : public DaemonTest, public ::testing::WithParamInterface<bool> {};

TEST_P(SignalBatch, OneDecisionPerBatchAndNoInterruptWhenTheGuestSaysSo) {
  const bool event_idx = GetParam();
  start_daemon({port("a", 1), port("b", 2)}, {{"busy_poll_us", 0}, {"signal_batch", 4}});
  fe::NegotiateOptions o;
  o.event_idx = event_idx;
  auto a = connect_guest("a", o);
  auto b = connect_receiving_guest("b", o);
  ASSERT_TRUE(a);
  ASSERT_EQ(port_get("b").at("tunables").at("signal_batch"), 4);

  // 64 frames made available at once and kicked once: one burst, 16 batches
  // of 4 used entries on b's receive ring.
  auto burst = [&](std::uint32_t seq) {
    std::vector<Bytes> frames;
    for (std::uint32_t i = 0; i < 64; ++i) frames.push_back(numbered_frame(kMacB, kMacA, seq + i));
    for (const auto& f : frames) EXPECT_TRUE(a->send_frame(f, std::nullopt, {.kick = false}));
    a->tx_queue().notify();
    return frames;
  };
  auto sent = burst(0);
  EXPECT_TRUE(same_frames(sent, receive(*b, sent.size())));
  ASSERT_TRUE(tx_drained(*a));
  EXPECT_TRUE(wait_until([&] {
    return counter("b", "interrupts") + counter("b", "interrupts_suppressed") == 16;
  })) << stats("b").dump();
  if (event_idx) {
    EXPECT_GE(counter("b", "interrupts"), 1u);
  } else {
    EXPECT_EQ(counter("b", "interrupts"), 16u);  // interrupts never disabled: every batch signalled
  }
  EXPECT_EQ(counter("b", "interrupts"), guest_interrupts(*b));

  // The guest turns interrupts off and polls: no interrupt at all.
  const auto before = counter("b", "interrupts");
  const auto suppressed = counter("b", "interrupts_suppressed");
  b->rx_queue().disable_interrupts();
  sent = burst(1000);
  std::vector<fe::ReceivedFrame> got;
  ASSERT_TRUE(wait_until([&] {
    auto more = b->net().poll_frames();
    got.insert(got.end(), more.begin(), more.end());
    return got.size() >= sent.size();
  }));
  EXPECT_TRUE(same_frames(sent, got));
  ASSERT_TRUE(tx_drained(*a));
  EXPECT_TRUE(wait_until([&] { return counter("b", "interrupts_suppressed") == suppressed + 16; }))
      << stats("b").dump();
  EXPECT_EQ(counter("b", "interrupts"), before);
  EXPECT_EQ(guest_interrupts(*b), before);
}

INSTANTIATE_TEST_SUITE_P(Daemon, SignalBatch, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "EventIdx" : "NoEventIdx"; });

// ---- service threads: event mode and busy polling ------------------------------

struct PingPongCase {
  const char* name;
  std::uint32_t busy_poll_us;
  int exchanges;
  bool event_idx = true;
};

void PrintTo(const PingPongCase& c, std::ostream* os) {
  *os << c.name;
}

class PingPong : public DaemonTest, public ::testing::WithParamInterface<PingPongCase> {};

TEST_P(PingPong, NoFrameIsLostOverThousandsOfRequestResponseExchanges) {
  const auto& c = GetParam();
  start_daemon({port("a", 1), port("b", 2)}, {{"busy_poll_us", c.busy_poll_us}});
  fe::NegotiateOptions o;
  o.event_idx = c.event_idx;
  auto a = connect_receiving_guest("a", o);
  auto b = connect_receiving_guest("b", o);
  const auto status = rpc().call("status");
  ASSERT_EQ(status.at("threads").size(), 1u);
  EXPECT_EQ(status.at("threads")[0].at("busy_poll_us"), c.busy_poll_us);
  const auto threads_before = rpc().call("stats.get").at("threads")[0];

  for (int i = 0; i < c.exchanges; ++i) {
    const auto seq = static_cast<std::uint32_t>(i);
    const Bytes request = numbered_frame(kMacB, kMacA, seq, 64 + i % 512);
    ASSERT_TRUE(a->send_frame(request)) << "exchange " << i;
    auto at_b = b->receive_frames(10s, 1);
    ASSERT_EQ(at_b.size(), 1u) << "request " << i << " lost";
    ASSERT_EQ(at_b[0].bytes, request) << "exchange " << i;
    const Bytes response = numbered_frame(kMacA, kMacB, 100000 + seq, 64 + i % 700);
    ASSERT_TRUE(b->send_frame(response)) << "exchange " << i;
    auto at_a = a->receive_frames(10s, 1);
    ASSERT_EQ(at_a.size(), 1u) << "response " << i << " lost";
    ASSERT_EQ(at_a[0].bytes, response) << "exchange " << i;
    a->reclaim_tx();
    b->reclaim_tx();
  }
  const auto n = static_cast<std::uint64_t>(c.exchanges);
  EXPECT_EQ(counter("a", "rx_packets"), n);
  EXPECT_EQ(counter("b", "rx_packets"), n);
  EXPECT_EQ(counter("a", "tx_packets"), n);
  EXPECT_EQ(counter("b", "tx_packets"), n);
  EXPECT_GT(counter("a", "kicks"), 0u);
  EXPECT_GT(counter("b", "kicks"), 0u);
  EXPECT_TRUE(wait_until([&] { return kicks_match(counter("a", "kicks"), *a); }))
      << kicks_match(counter("a", "kicks"), *a).message();
  EXPECT_TRUE(wait_until([&] { return kicks_match(counter("b", "kicks"), *b); }))
      << kicks_match(counter("b", "kicks"), *b).message();
  const auto threads = rpc().call("stats.get").at("threads")[0];
  const auto sleeps =
      threads.at("sleeps").get<std::uint64_t>() - threads_before.at("sleeps").get<std::uint64_t>();
  const auto wakeups = threads.at("wakeups").get<std::uint64_t>() -
                       threads_before.at("wakeups").get<std::uint64_t>();
  if (c.busy_poll_us == 0) {
    // Pure event mode: the thread sleeps between frames (two frames per
    // exchange, each waited for by the test thread), so it slept in most
    // exchanges; a thread that never sleeps would show none.
    EXPECT_GE(sleeps, n / 2) << threads.dump();
    EXPECT_GT(counter("a", "kicks"), n / 2);
  }
  EXPECT_GE(wakeups + 1, sleeps) << threads.dump();
  EXPECT_TRUE(wait_until([&] {
    return rpc().call("status").at("threads")[0].at("state") == "sleeping";
  })) << "the service thread does not go to sleep when idle";
}

INSTANTIATE_TEST_SUITE_P(Daemon, PingPong,
                         ::testing::Values(PingPongCase{"EventMode", 0, 2000},
                                           PingPongCase{"EventModeNoEventIdx", 0, 2000, false},
                                           PingPongCase{"BusyPoll50us", 50, 2000},
                                           PingPongCase{"BusyPoll50usNoEventIdx", 50, 2000, false}),
                         [](const auto& info) { return std::string(info.param.name); });

class RunTime : public DaemonTest {};

TEST_F(RunTime, TunablesAndStatsResetAtRunTime) {
  start_daemon({port("a", 1), port("b", 2)}, {{"busy_poll_us", 0}});
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  ASSERT_TRUE(exchange(*a, kMacA, *b, kMacB, 50, 0));
  rpc().call("tunables.set", {{"busy_poll_us", 50}});
  EXPECT_TRUE(
      wait_until([&] { return rpc().call("status").at("threads")[0].at("busy_poll_us") == 50; }));
  ASSERT_TRUE(exchange(*a, kMacA, *b, kMacB, 50, 100));
  rpc().call("stats.reset");
  EXPECT_EQ(counter("a", "rx_packets"), 0u);
  EXPECT_EQ(counter("b", "tx_packets"), 0u);
  rpc().call("tunables.set", {{"busy_poll_us", 0}});
  ASSERT_TRUE(exchange(*a, kMacA, *b, kMacB, 7, 200));
  EXPECT_EQ(counter("a", "rx_packets"), 7u);
  EXPECT_EQ(counter("a", "tx_packets"), 7u);
  EXPECT_EQ(counter("b", "rx_packets"), 7u);
}

}  // namespace
}  // namespace xdpvhost::integration

// Dataplane::move for real: ports moved between running service threads
// while numbered frames flow. Every frame arrives once and in order, floods
// included; a move waits for the frames already queued toward the port, and
// one that cannot finish leaves the port where it was, losing nothing; a
// thousand moves hold no fd, mapping, thread or heap more than before.

#include <gtest/gtest.h>
#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "attached_guest.hpp"
#include "dataplane/dataplane.hpp"
#include "dataplane/frame.hpp"
#include "net_test_guest.hpp"
#include "sys/resource_ledger.hpp"

namespace xdpvhost::dataplane {
namespace {

using namespace std::chrono_literals;
using test::Attached;
using test::eventually;
using test::options;

const std::uint8_t kMacA[6] = {0x52, 0x54, 0, 0, 2, 0xa};
const std::uint8_t kMacB[6] = {0x52, 0x54, 0, 0, 2, 0xb};
const std::uint8_t kBroadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr std::size_t kSeqAt = 14 + 20 + 8;  // the UDP payload: the frame's number

// UDP frame number `seq` to `dst`.
std::vector<std::uint8_t> numbered(const std::uint8_t dst[6], std::uint32_t seq) {
  auto f = test::udp_frame(dst, kMacA, 32);
  std::memcpy(f.data() + kSeqAt, &seq, sizeof seq);
  return f;
}

std::uint32_t seq_of(const std::vector<std::uint8_t>& bytes) {
  std::uint32_t seq = 0;
  std::memcpy(&seq, bytes.data() + kSeqAt, sizeof seq);
  return seq;
}

// Every drop of the port, "reason=count ...", or "" when it dropped none.
std::string drops(const Port& p) {
  std::string out;
  for (std::size_t r = 0; r < kDropReasons; ++r)
    if (const auto n = p.counters().drops[r].get(); n != 0)
      out += std::string(to_string(static_cast<DropReason>(r))) + "=" + std::to_string(n) + " ";
  return out;
}

TEST(DataplaneMove, FramesArriveOnceAndInOrderWhileBothPortsMoveAThousandTimes) {
  // Three threads, a sender A and a receiver B, both moved round the threads
  // while A's guest sends numbered frames, every fifth a broadcast (a flood
  // waits while a port moves). One driver thread plays both guests.
  Dataplane dp(options(3, 50));
  PortTunables unlimited;
  unlimited.flood_rate = 0;  // the broadcasts go at the frames' rate
  Attached a(dp, 0, kMacA, test::default_features(), 1500, unlimited), b(dp, 1, kMacB);
  constexpr std::uint32_t kMaxFrames = 60000;  // what the test rings' heaps hold
  constexpr std::uint32_t kRxBuffer = 96;      // a header and a 74-byte frame
  std::atomic<bool> stop{false};
  std::uint32_t sent = 0, received = 0, out_of_order = 0;
  const sys::ResourceLedger before = sys::take_resource_ledger();
  std::thread driver([&] {
    std::uint32_t posted = 0;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (std::chrono::steady_clock::now() < deadline) {
      const bool stopping = stop.load();
      if (stopping && received == sent) break;
      // At most 64 frames on their way and a receive buffer posted for
      // each: no mailbox fills (a broadcast would be dropped there,
      // mailbox_full) and no frame waits for a buffer (no_rx_buffer). What
      // is left to go wrong is the move.
      const bool room = sent - received < 64 && posted >= sent + 16;
      if (!stopping && sent < kMaxFrames && room) {
        a.guest.send(numbered(sent % 5 == 4 ? kBroadcast : kMacB, sent));
        ++sent;
      }
      for (const auto& f : b.guest.received()) {
        if (seq_of(f.bytes) != received) ++out_of_order;
        ++received;
      }
      if (posted < sent + 80 && posted < kMaxFrames) {
        b.guest.post_rx(16, kRxBuffer);
        posted += 16;
      }
      if (!room) std::this_thread::sleep_for(20us);
    }
  });
  int moved = 0;
  for (int i = 0; i < 1000; ++i) {
    Port& port = i % 2 == 0 ? static_cast<Port&>(b.port) : a.port;
    const auto to = static_cast<std::uint16_t>((dp.thread_of(port) + 1 + i % 2) % 3);
    const Dataplane::Move m = dp.move(port, to);
    if (m.outcome == MoveOutcome::kMoved) ++moved;
    EXPECT_EQ(dp.thread_of(port), m.outcome == MoveOutcome::kMoved ? to : m.from);
    std::this_thread::sleep_for(100us);  // frames flow between moves
  }
  stop = true;
  driver.join();
  // A thousand moves (a table published and retired for each) hold nothing
  // more: fds, mappings and threads as before, the heap within what the
  // test's own guests keep.
  const sys::ResourceLedger after = sys::take_resource_ledger();
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.mapped.count, before.mapped.count);
  EXPECT_EQ(after.threads, before.threads);
  EXPECT_LE(after.heap.in_use, before.heap.in_use + 64 * 1024)
      << "heap " << before.heap.in_use << " -> " << after.heap.in_use;
  EXPECT_EQ(moved, 1000);
  EXPECT_EQ(dp.moves(MoveOutcome::kMoved), 1000u);
  EXPECT_GT(sent, 1000u) << "hardly any traffic while the ports moved";
  EXPECT_EQ(received, sent) << "lost or duplicated";
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(drops(a.port), "");
  EXPECT_EQ(drops(b.port), "");
  for (std::uint16_t t = 0; t < 3; ++t)
    EXPECT_EQ(dp.thread(t).counters().dropped_port_gone.get(), 0u) << "thread " << t;
}

// A guest-kind port that takes frames only while open (can_accept), and
// records each frame's number and the thread that delivered it.
class Sink final : public Port {
 public:
  explicit Sink(std::uint32_t id) : Port(id, "sink", PortKind::kGuest) {}
  unsigned poll(Forwarder&) override { return 0; }
  bool can_accept(const Frame&) const noexcept override { return open.load(); }
  void deliver(const Frame& frame) override {
    std::uint8_t seq[4];
    gather(frame, kSeqAt, seq, sizeof seq);
    const std::lock_guard lock(mutex);
    seqs.push_back(static_cast<std::uint32_t>(seq[0]) | std::uint32_t{seq[1]} << 8 |
                   std::uint32_t{seq[2]} << 16 | std::uint32_t{seq[3]} << 24);
    tids.push_back(::gettid());
  }
  bool settled() const noexcept override { return settle.load(); }
  void end_burst() override {}
  bool prepare_sleep() override { return false; }
  void after_wake() override {}
  void wait_fds(std::vector<WaitFd>&, bool&) override {}

  std::size_t count() {
    const std::lock_guard lock(mutex);
    return seqs.size();
  }

  std::atomic<bool> open{true};
  std::atomic<bool> settle{true};
  std::mutex mutex;
  std::vector<std::uint32_t> seqs;
  std::vector<pid_t> tids;
};

TEST(DataplaneMove, AMoveWaitsForTheFramesQueuedTowardThePort) {
  // Frames for the sink wait in thread 1's mailbox (it is closed): the move
  // to thread 2 lets it go only once they are delivered, by thread 1; later
  // frames are delivered by thread 2. All in order, none lost.
  Dataplane dp(options(3, 50));
  Attached a(dp, 0, kMacA);
  Sink sink(dp.allocate_port_id());
  dp.attach(sink, 1, net::MacAddress::from(kMacB));
  sink.open = false;
  for (std::uint32_t i = 0; i < 5; ++i) a.guest.send(numbered(kMacB, i));
  ASSERT_TRUE(eventually([&] { return a.guest.tx_completed() == 5; }));
  std::thread opener([&] {
    std::this_thread::sleep_for(100ms);
    sink.open = true;
  });
  const Dataplane::Move m = dp.move(sink, 2);
  opener.join();
  EXPECT_EQ(m.outcome, MoveOutcome::kMoved);
  EXPECT_GE(m.took, 50ms) << "moved before the queued frames were delivered";
  ASSERT_EQ(sink.count(), 5u) << "the move returned before the queued frames were delivered";
  for (std::uint32_t i = 5; i < 10; ++i) a.guest.send(numbered(kMacB, i));
  ASSERT_TRUE(eventually([&] { return sink.count() == 10; }));
  for (std::uint32_t i = 0; i < 10; ++i) {
    EXPECT_EQ(sink.seqs[i], i);
    EXPECT_EQ(sink.tids[i], dp.thread(i < 5 ? 1 : 2).tid()) << "frame " << i;
  }
  dp.detach(sink);
}

TEST(DataplaneMove, APortThatDoesNotSettleStaysAndLosesNothing) {
  Dataplane dp(options(2, 50));
  Attached a(dp, 0, kMacA);
  Sink sink(dp.allocate_port_id());
  dp.attach(sink, 0, net::MacAddress::from(kMacB));
  sink.settle = false;  // as an uplink queue whose TX ring does not drain
  const Dataplane::Move m = dp.move(sink, 1);
  EXPECT_EQ(m.outcome, MoveOutcome::kNotSettled);
  EXPECT_GE(m.took, Dataplane::kMoveDeadline);
  EXPECT_EQ(dp.thread_of(sink), 0);
  EXPECT_EQ(dp.moves(MoveOutcome::kNotSettled), 1u);
  // It runs on where it was: frames reach it, from thread 0.
  for (std::uint32_t i = 0; i < 3; ++i) a.guest.send(numbered(kMacB, i));
  ASSERT_TRUE(eventually([&] { return sink.count() == 3; }));
  EXPECT_EQ(sink.tids[2], dp.thread(0).tid());
  EXPECT_EQ(dp.move(sink, 0).outcome, MoveOutcome::kAlreadyThere);
  sink.settle = true;
  EXPECT_EQ(dp.move(sink, 1).outcome, MoveOutcome::kMoved);
  EXPECT_EQ(dp.thread_of(sink), 1);
  dp.detach(sink);
}

}  // namespace
}  // namespace xdpvhost::dataplane

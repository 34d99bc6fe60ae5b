// The uplink's periodic check (UplinkController::periodic_check, run every
// 5 s for the life of the daemon) run thousands of times on a real veth
// uplink, with the interface's MTU changed and the XDP program removed by
// someone else in between: it follows every change, and afterwards the
// process holds exactly the fds (by kind) and mappings (by kind) it held
// before, and its heap has not grown.

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "controller/uplink_controller.hpp"
#include "dataplane/dataplane.hpp"
#include "netns_fixture.hpp"
#include "sys/resource_ledger.hpp"

namespace xdpvhost::xsk::test {
namespace {

std::uint64_t rss_anon_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("RssAnon:", 0) == 0) return std::stoull(line.substr(8));
  return 0;
}

class UplinkPeriodicCheck : public NetnsPair {
 protected:
  void SetUp() override {
    NetnsPair::SetUp();
    dataplane_.emplace(dataplane::Dataplane::Options{});
    controller::UplinkConfig config;
    config.name = "up0";
    config.interface = kIfA;
    config.bind = xsk::BindMode::kCopy;
    uplink_.emplace(*dataplane_, io_, config, 1, dataplane::Tunables{}, "");
    std::string error;
    ASSERT_TRUE(uplink_->start(error)) << error;
    io_.poll();
    ASSERT_TRUE(bound());
  }
  void TearDown() override {
    uplink_.reset();
    dataplane_.reset();
    NetnsPair::TearDown();
  }
  bool bound() { return uplink_->queue_reports().at(0).bind_mode == "copy"; }
  bool attached() { return !uplink_->program_report().empty(); }
  // Checks until the program is attached and the queue bound again, as the
  // timer would every 5 s: the kernel releases the socket of the program
  // someone removed a moment later, and a bind to its queue before that is
  // refused (EBUSY). The number of checks it took; 0 if it never did.
  int checks_until_set_up() {
    for (int n = 1; n <= 200; ++n) {
      uplink_->periodic_check();
      io_.poll();
      if (attached() && bound()) return n;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
  }

  boost::asio::io_context io_;
  std::optional<dataplane::Dataplane> dataplane_;
  std::optional<controller::UplinkController> uplink_;
};

TEST_F(UplinkPeriodicCheck, ThousandsOfChecksFollowEveryChangeAndHoldNothing) {
  constexpr int kChecks = 3000;
  std::string out;
  // Warm up: one detach and one MTU change, as below, so that what is
  // allocated once (libbpf's and the allocator's caches) is in the baseline.
  ASSERT_EQ(run_in_a(std::string("ip link set dev ") + kIfA + " xdp off", &out), 0) << out;
  ASSERT_GT(checks_until_set_up(), 0);
  ASSERT_EQ(run_in_a(std::string("ip link set dev ") + kIfA + " mtu 1400", &out), 0) << out;
  uplink_->periodic_check();
  ASSERT_EQ(run_in_a(std::string("ip link set dev ") + kIfA + " mtu 1500", &out), 0) << out;
  uplink_->periodic_check();
  io_.poll();
  ASSERT_TRUE(attached() && bound());
  EXPECT_TRUE(uplink_->queue_reports().at(0).multi_buffer);
  const sys::ResourceLedger before = sys::take_resource_ledger();
  const std::uint64_t anon_before = rss_anon_kib();
  int reattached = 0, mtus_followed = 0, most_checks = 0;
  for (int i = 1; i <= kChecks; ++i) {
    if (i % 300 == 0) {  // someone removes our program (ip link set dev X xdp off)
      ASSERT_EQ(run_in_a(std::string("ip link set dev ") + kIfA + " xdp off", &out), 0) << out;
      const int checks = checks_until_set_up();
      ASSERT_GT(checks, 0) << i;
      EXPECT_TRUE(uplink_->queue_reports().at(0).multi_buffer)
          << i << ": bound as before (a queue still busy for a moment is no reason to bind "
          << "without multi-buffer)";
      most_checks = std::max(most_checks, checks);
      ++reattached;
    } else if (i % 150 == 0) {  // the interface's MTU changes, and back
      const std::uint32_t mtu = (i / 150) % 2 == 1 ? 1400 : 1500;
      ASSERT_EQ(
          run_in_a(std::string("ip link set dev ") + kIfA + " mtu " + std::to_string(mtu), &out), 0)
          << out;
      uplink_->periodic_check();
      std::string why;
      EXPECT_EQ(uplink_->admits_mtu(mtu + 1, why), false) << i << ": the limit follows " << mtu;
      EXPECT_TRUE(uplink_->admits_mtu(mtu, why)) << i << ": " << why;
      ++mtus_followed;
    } else {
      uplink_->periodic_check();
    }
    io_.poll();  // link events the changes caused
  }
  ASSERT_EQ(run_in_a(std::string("ip link set dev ") + kIfA + " mtu 1500", &out), 0) << out;
  uplink_->periodic_check();
  io_.poll();
  const sys::ResourceLedger after = sys::take_resource_ledger();
  const std::uint64_t anon_after = rss_anon_kib();
  std::printf(
      "%d checks, %d re-attachments (at most %d checks each), %d MTU changes followed; "
      "fds %u -> %u, mappings umem %lu -> %lu bytes, RssAnon %lu -> %lu kB\n",
      kChecks, reattached, most_checks, mtus_followed, before.fds_total(), after.fds_total(),
      static_cast<unsigned long>(before.mapped.bytes_of(sys::MappingKind::kUmem)),
      static_cast<unsigned long>(after.mapped.bytes_of(sys::MappingKind::kUmem)),
      static_cast<unsigned long>(anon_before), static_cast<unsigned long>(anon_after));
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.mapped.bytes, before.mapped.bytes);
  EXPECT_EQ(after.mapped.count, before.mapped.count);
  EXPECT_GT(before.mapped.count_of(sys::MappingKind::kUmem), 0u) << "the socket's UMEM is counted";
  EXPECT_LT(anon_after - std::min(anon_after, anon_before), 1024u) << "the heap grew";
  EXPECT_EQ(after.threads, before.threads);
}

// Someone removes our program; the next check attaches it again at once, but
// the kernel may not have let go of the old socket yet (EBUSY on the bind).
// The queue is then bound again within a second or two, by repairs soon
// after the check, not five seconds later at the next one.
TEST_F(UplinkPeriodicCheck, AQueueStillBusyAfterAForeignDetachIsBoundSoonNotAtTheNextCheck) {
  std::string out;
  int at_once = 0, soon = 0;
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(run_in_a(std::string("ip link set dev ") + kIfA + " xdp off", &out), 0) << out;
    const std::uint64_t retries = uplink_->soon_retries();
    uplink_->periodic_check();
    io_.poll();
    ASSERT_TRUE(attached()) << i;
    if (bound()) {
      ++at_once;
      continue;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!bound() && std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(bound()) << i << ": not bound 3 s after the check";
    EXPECT_GT(uplink_->soon_retries(), retries) << i << ": bound by a repair soon after";
    ++soon;
  }
  std::printf("%d re-attachments bound at once, %d by a repair soon after the check\n", at_once,
              soon);
}

}  // namespace
}  // namespace xdpvhost::xsk::test

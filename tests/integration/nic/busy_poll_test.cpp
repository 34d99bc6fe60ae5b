// NAPI busy polling (docs/techniques.md) on a veth: SO_INCOMING_NAPI_ID, the busy-poll options set,
// verified and rolled back on an AF_XDP socket, traffic with preferred and
// non-preferred busy polling, and the starvation detector against real
// kernel counters.
#include "xsk/busy_poll.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "child_process.hpp"
#include "netns_fixture.hpp"
#include "xsk/starvation_detector.hpp"
#include "xsk_path.hpp"

namespace xdpvhost::xsk::test {
namespace {

const MacAddress kGuest = {0x02, 0x00, 0x00, 0x00, 0x00, 0xaa};

class BusyPollTest : public NetnsPair {
 protected:
  void TearDown() override {
    stop_sender();
    path_.close();
    NetnsPair::TearDown();
  }

  void open_path(bool refill = true) {
    if (refill) {
      ASSERT_TRUE(path_.open(kIfA)) << path_.error;
    } else {
      std::string& error = path_.error;
      ASSERT_TRUE(path_.program = XdpProgram::attach(kIfA, {}, error)) << error;
      ASSERT_TRUE(path_.umem = Umem::create({}, error)) << error;
      XskSocketConfig config;
      config.ifname = kIfA;
      ASSERT_TRUE(path_.socket = XskSocket::create(*path_.umem, config, error)) << error;
      ASSERT_EQ(path_.program->register_socket(0, path_.socket->fd()), 0);
    }
    ASSERT_EQ(path_.program->add_guest_mac(kGuest), 0);
  }

  // A child process in namespace b sends `count` frames to the guest MAC,
  // one every `gap_us` microseconds.
  void start_sender(int count, int gap_us) {
    const std::string ns_path = "/var/run/netns/" + ns_b_;
    const MacAddress src = mac_b_;
    sender_ = ::fork();
    ASSERT_GE(sender_, 0);
    if (sender_ == 0) {
      const int fd = ::open(ns_path.c_str(), O_RDONLY);
      if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0) ::_exit(2);
      PacketSocket peer(kIfB, kTestEtherType);
      if (!peer.valid()) ::_exit(3);
      for (int i = 0; i < count; ++i) {
        if (!peer.send(make_frame(kGuest, src, static_cast<std::uint32_t>(i), 100))) ::_exit(4);
        ::usleep(static_cast<useconds_t>(gap_us));
      }
      ::_exit(0);
    }
  }
  int stop_sender() {
    if (sender_ <= 0) return -1;
    int status = 0;
    ::waitpid(sender_, &status, 0);
    sender_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  StarvationSample sample(std::uint64_t offered) {
    StarvationSample s;
    s.offered = offered;
    EXPECT_EQ(path_.socket->read_statistics(s.xsk), 0);
    s.fill_level = path_.umem->fill_level();
    return s;
  }
  std::uint64_t redirected() {
    XdpSteerStats st;
    EXPECT_EQ(path_.program->read_stats(st), 0);
    return st.redirected;
  }

  // The service-thread loop in miniature: take RX, refill, drive NAPI when
  // empty, feed the detector. Stops after `want` frames, on a starvation
  // verdict, or after `max_windows` windows.
  struct LoopResult {
    std::uint64_t rx = 0;
    StarvationVerdict verdict;
    int windows = 0;
  };
  LoopResult poll_loop(std::uint64_t want, int max_windows, bool refill,
                       const std::function<std::uint64_t()>& offered) {
    StarvationConfig config;
    config.window_rounds = 200;  // each empty round sleeps 50 us: a window is >= 10 ms
    config.min_offered = 8;
    config.windows_to_trip = 3;
    StarvationDetector detector(config);
    LoopResult r;
    (void)detector.evaluate(sample(offered()));  // baseline
    while (r.rx < want && r.windows < max_windows && !r.verdict.starving) {
      std::uint32_t idx = 0;
      const std::uint32_t n = path_.socket->rx_peek(64, idx);
      for (std::uint32_t i = 0; i < n; ++i)
        path_.umem->frames().free(path_.socket->rx_desc(idx + i).addr);
      if (n != 0) {
        path_.socket->rx_release(n);
        if (refill) path_.umem->refill(n);
        r.rx += n;
      } else {
        (void)drive_napi(path_.socket->fd());
        ::usleep(50);  // keep the sender (same 2 cores) running
      }
      if (detector.round(n)) {
        ++r.windows;
        r.verdict = detector.evaluate(sample(offered()));
      }
    }
    return r;
  }

  XskPath path_;
  pid_t sender_ = -1;
};

TEST_F(BusyPollTest, VethSocketsHaveNoNapiId) {
  open_path();
  std::uint32_t id = 99;
  ASSERT_EQ(read_napi_id(path_.socket->fd(), id), 0);
  EXPECT_EQ(id, 0u);
  start_sender(20, 0);
  EXPECT_EQ(stop_sender(), 0);
  EXPECT_EQ(path_.receive(20, 2000).size(), 20u);
  // Not even after frames went through veth's NAPI (native XDP): veth does
  // not register its NAPI with the RX queue, so busy polling has nothing to
  // poll here.
  ASSERT_EQ(read_napi_id(path_.socket->fd(), id), 0);
  EXPECT_EQ(id, 0u);
}

TEST_F(BusyPollTest, OptionsAreSetAndVerifiedOnTheXskSocket) {
  open_path();
  const BusyPollOutcome o = apply_busy_poll(path_.socket->fd(), BusyPollConfig{50, 64, true});
  EXPECT_TRUE(o.applied) << o.reason;
  EXPECT_EQ(o.in_effect, (BusyPollSettings{50, true}));
  EXPECT_EQ(o.budget, 64u);
  EXPECT_EQ(o.napi_id, 0u);
  // And off again.
  const BusyPollOutcome off = apply_busy_poll(path_.socket->fd(), BusyPollConfig{0, 0, false});
  EXPECT_TRUE(off.applied) << off.reason;
  EXPECT_EQ(off.in_effect, (BusyPollSettings{0, false}));
}

TEST_F(BusyPollTest, RefusalRestoresTheValuesInForce) {
  open_path();
  const int fd = path_.socket->fd();
  ASSERT_TRUE(apply_busy_poll(fd, BusyPollConfig{50, 64, true}).applied);
  // Without CAP_NET_ADMIN: usecs and budget go down (allowed), then
  // SO_PREFER_BUSY_POLL=1 is refused, so both must come back.
  const std::string result = run_in_child([fd] {
    if (!drop_capability(CAP_NET_ADMIN)) return std::string("capset failed");
    const BusyPollOutcome o = apply_busy_poll(fd, BusyPollConfig{20, 32, true});
    if (o.applied) return std::string("applied without CAP_NET_ADMIN");
    return std::to_string(o.in_effect.usecs) + (o.in_effect.prefer ? " prefer " : " noprefer ") +
           o.reason;
  });
  EXPECT_EQ(result.rfind("50 prefer ", 0), 0u) << result;
  EXPECT_NE(result.find("SO_PREFER_BUSY_POLL=1 refused: Operation not permitted"),
            std::string::npos)
      << result;
  BusyPollSettings now;
  ASSERT_EQ(read_busy_poll(fd, now), 0);
  EXPECT_EQ(now, (BusyPollSettings{50, true}));
}

class BusyPollModes : public BusyPollTest, public ::testing::WithParamInterface<bool> {};

// Traffic keeps flowing with and without SO_PREFER_BUSY_POLL on veth, and
// the detector, fed with real counters, does not cry wolf.
TEST_P(BusyPollModes, TrafficFlowsAndNoStarvationIsReported) {
  const bool prefer = GetParam();
  open_path();
  const BusyPollOutcome o = apply_busy_poll(path_.socket->fd(), BusyPollConfig{50, 64, prefer});
  ASSERT_TRUE(o.applied) << o.reason;
  constexpr int kFrames = 1000;
  start_sender(kFrames, 200);
  const LoopResult r = poll_loop(kFrames, 400, true, [&] { return redirected(); });
  EXPECT_EQ(stop_sender(), 0);
  EXPECT_FALSE(r.verdict.starving) << r.verdict.reason;
  EXPECT_EQ(r.rx, static_cast<std::uint64_t>(kFrames));
  EXPECT_GE(r.windows, 3) << "the detector must have judged several windows";
  XskStatistics st;
  ASSERT_EQ(path_.socket->read_statistics(st), 0);
  EXPECT_EQ(st.rx_dropped, 0u);
  std::printf("prefer=%d: %llu frames in %d windows\n", prefer,
              static_cast<unsigned long long>(r.rx), r.windows);
}

INSTANTIATE_TEST_SUITE_P(PreferredAndNot, BusyPollModes, ::testing::Values(false, true));

TEST_F(BusyPollTest, DetectorNamesAnEmptyFillRing) {
  open_path(/*refill=*/false);  // the fill ring never gets a frame
  start_sender(100000, 100);
  const LoopResult r = poll_loop(1, 400, false, [&] { return redirected(); });
  ::kill(sender_, SIGKILL);
  stop_sender();
  EXPECT_EQ(r.rx, 0u);
  ASSERT_TRUE(r.verdict.starving) << "after " << r.windows << " windows";
  EXPECT_EQ(r.verdict.cause, StarvationCause::kFillRingEmpty) << r.verdict.reason;
}

// Device-level RX counters grow while nothing reaches the socket: the
// signature of a queue whose frames are not being delivered. Produced here
// for real by letting the program pass everything to the kernel.
std::uint64_t device_rx_packets(const std::string& ifname) {
  std::ifstream dev("/proc/self/net/dev");
  std::string line;
  while (std::getline(dev, line)) {
    std::istringstream in(line);
    std::string name;
    in >> name;
    if (name == ifname + ":") {
      std::uint64_t bytes = 0, packets = 0;
      in >> bytes >> packets;
      return packets;
    }
  }
  return 0;
}

TEST_F(BusyPollTest, DetectorNamesFramesThatNeverArrive) {
  open_path();
  ASSERT_EQ(path_.program->set_bypass(true), 0);
  start_sender(100000, 100);
  const LoopResult r = poll_loop(1, 400, true, [&] { return device_rx_packets(kIfA); });
  ::kill(sender_, SIGKILL);
  stop_sender();
  EXPECT_EQ(r.rx, 0u);
  ASSERT_TRUE(r.verdict.starving) << "after " << r.windows << " windows";
  EXPECT_EQ(r.verdict.cause, StarvationCause::kNoDelivery) << r.verdict.reason;
}

}  // namespace
}  // namespace xdpvhost::xsk::test

// SocketEndpoint on a real unix socket and io_context: connections that a
// port's socket accepts or turns away are charged to that port's share of
// the control thread, so a connect-and-close flood holds up nobody else; a
// message that costs the connection is not answered; a client-mode port
// that reconnects for months holds no more than on its first attempt.

#include "vhost/socket_endpoint.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "frontend/vhost_user_channel.hpp"
#include "sys/resource_ledger.hpp"
#include "sys/unique_fd.hpp"
#include "vhost/device_backend.hpp"

namespace xdpvhost::vhost {
namespace {

using namespace std::chrono_literals;

struct IdleBackend : DeviceBackend {
  void start_queue(QueueStart) override {}
  std::optional<std::uint16_t> stop_queue(std::uint32_t, RingStop) override { return 0; }
  void set_mtu(std::uint32_t) override {}
};

// Rings start; where they stopped is never known (a stalled service thread).
struct StalledBackend : IdleBackend {
  std::optional<std::uint16_t> stop_queue(std::uint32_t, RingStop) override { return std::nullopt; }
};

// A non-blocking listening unix socket at `path` (a frontend in server mode).
sys::UniqueFd listen_at(const std::string& path) {
  sys::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof addr.sun_path - 1);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd.get(), 16) != 0)
    return {};
  return fd;
}

sys::UniqueFd connect_to(const std::string& path) {
  sys::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, sizeof addr.sun_path - 1);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) return {};
  return fd;
}

class SocketEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/xdpvhost-endpoint-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    sys::set_port_socket_dirs({dir_});
  }
  void TearDown() override {
    sys::set_port_socket_dirs({});
    std::filesystem::remove_all(dir_);
  }
  std::unique_ptr<SocketEndpoint> endpoint(const std::string& name, Device& device,
                                           sys::CpuBudget::Limits budget) {
    SocketEndpoint::Options o;
    o.name = name;
    o.path = dir_ + "/" + name + ".sock";
    o.budget = budget;
    auto e = std::make_unique<SocketEndpoint>(io_, o, device);
    std::string error;
    EXPECT_TRUE(e->start(error)) << error;
    return e;
  }
  // Runs the io_context until `done` or `limit` passed.
  template <typename F>
  bool run_until(F done, std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done()) {
      if (std::chrono::steady_clock::now() > end) return false;
      io_.run_for(std::chrono::milliseconds(5));
      if (io_.stopped()) io_.restart();
    }
    return true;
  }
  // A client-mode port to dir_/NAME.sock with these waits, never throttled:
  // each attempt costs the control thread a little, and these tests are
  // about the attempts.
  SocketEndpoint::Options client_options(const std::string& name,
                                         std::chrono::milliseconds interval,
                                         std::chrono::milliseconds max) {
    SocketEndpoint::Options o;
    o.name = name;
    o.path = dir_ + "/" + name + ".sock";
    o.mode = SocketEndpoint::Mode::kClient;
    o.reconnect_interval = interval;
    o.reconnect_max = max;
    o.budget = {std::chrono::hours(1), 1.0};
    return o;
  }
  void run_for(std::chrono::milliseconds d) {
    (void)run_until([] { return false; }, d);
  }
  // Sets up ring 1 (the first transmit queue) over `frontend` and runs the
  // endpoint until the device runs it. VERSION_1 only: no REPLY_ACK
  // (nothing waits for a reply while the endpoint's io_context is not run),
  // and rings run once kicked. The memory and kick fds are the device's
  // afterwards (sent over the socket).
  void run_one_ring(testing::VhostUserChannel& frontend, const Device& device) {
    ASSERT_TRUE(frontend.set_features(std::uint64_t{1} << 32));
    sys::UniqueFd memory(::memfd_create("guest", MFD_CLOEXEC));
    ASSERT_EQ(::ftruncate(memory.get(), 1 << 20), 0);
    const testing::vhost_user::MemoryRegion region{0, 1 << 20, 0x7f0000000000, 0};
    const int fds[] = {memory.get()};
    ASSERT_TRUE(frontend.set_mem_table({&region, 1}, fds));
    ASSERT_TRUE(frontend.set_vring_num(1, 256));
    ASSERT_TRUE(frontend.set_vring_base(1, 0));
    ASSERT_TRUE(frontend.set_vring_addr({1, 0, 0x7f0000000000, 0x7f0000002000, 0x7f0000001000, 0}));
    sys::UniqueFd kick(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    ASSERT_TRUE(frontend.set_vring_kick(1, kick.get()));
    ASSERT_TRUE(run_until([&] { return device.vrings()[1].running; }, 5s));
  }

  boost::asio::io_context io_;
  std::string dir_;
};

TEST_F(SocketEndpointTest, AConnectionFloodIsChargedToItsPortAndHoldsUpNobodyElse) {
  IdleBackend backend_a, backend_b;
  Device device_a{DeviceOptions{1, true}, backend_a}, device_b{DeviceOptions{1, true}, backend_b};
  // A small burst, so that the flood spends it quickly.
  auto flooded = endpoint("flooded", device_a, {std::chrono::milliseconds(20), 0.02});
  auto other = endpoint("other", device_b, SocketEndpoint::kFrontendBudget);
  const std::string flooded_path = flooded->options().path;
  // The port's own frontend, attached: every further connection is turned away.
  sys::UniqueFd frontend = connect_to(flooded_path);
  ASSERT_TRUE(frontend.valid());
  ASSERT_TRUE(run_until([&] { return flooded->state() == SocketEndpoint::State::kConnected; },
                        std::chrono::seconds(5)));

  std::atomic<bool> stop{false};
  std::thread flood([&] {
    while (!stop.load()) sys::UniqueFd c = connect_to(flooded_path);  // and closed at once
  });
  const bool throttled =
      run_until([&] { return flooded->counters().throttled > 0; }, std::chrono::seconds(30));
  // While the flood goes on, the other port takes its frontend at once.
  const auto t0 = std::chrono::steady_clock::now();
  sys::UniqueFd other_frontend = connect_to(other->options().path);
  // No ASSERT before the flood thread is joined.
  const bool attached =
      other_frontend.valid() &&
      run_until([&] { return other->state() == SocketEndpoint::State::kConnected; },
                std::chrono::seconds(5));
  const auto t1 = std::chrono::steady_clock::now();
  stop = true;
  flood.join();
  EXPECT_TRUE(throttled) << "turned-away connections were not charged to the port: "
                         << flooded->counters().rejected_connections << " in 30 s";
  EXPECT_TRUE(attached);
  EXPECT_GT(flooded->counters().rejected_connections, 0u);
  EXPECT_EQ(flooded->state(), SocketEndpoint::State::kConnected) << "its own frontend stays";
  std::cout << "  " << flooded->counters().rejected_connections
            << " connections turned away; the other port attached its frontend in "
            << std::chrono::duration<double, std::milli>(t1 - t0).count() << " ms\n";
}

TEST_F(SocketEndpointTest, AGetVringBaseWithoutAKnownIndexClosesTheConnectionUnanswered) {
  StalledBackend backend;
  Device device{DeviceOptions{1, true}, backend};
  auto e = endpoint("stalled", device, SocketEndpoint::kFrontendBudget);
  auto frontend = testing::VhostUserChannel::connect_to(e->options().path, 5s);
  ASSERT_TRUE(frontend.connected());
  ASSERT_NO_FATAL_FAILURE(run_one_ring(frontend, device));

  const testing::vhost_user::VringState get{1, 0};
  ASSERT_TRUE(frontend.send_raw(
      static_cast<std::uint32_t>(testing::vhost_user::Request::kGetVringBase),
      testing::vhost_user::kVersion, {reinterpret_cast<const std::uint8_t*>(&get), sizeof get}));
  ASSERT_TRUE(run_until([&] { return e->state() != SocketEndpoint::State::kConnected; }, 5s));
  char reply[64];
  EXPECT_EQ(::recv(frontend.fd(), reply, sizeof reply, MSG_DONTWAIT), 0)
      << "closed without a reply: no made-up index reaches the frontend";
}

// A client-mode port whose frontend is not there tries again every
// reconnect_interval, for as long as the daemon runs (a VM that is off, a
// node drained); and one whose frontend accepts and hangs up goes round
// connect, attach, close. Thousands of each hold nothing more: fds by kind,
// mappings, threads.
TEST_F(SocketEndpointTest, AClientPortReconnectingThousandsOfTimesHoldsNothingMore) {
  IdleBackend backend;
  Device device{DeviceOptions{1, true}, backend};
  // Hang-ups are asked again at once, not less and less often.
  SocketEndpoint::Options o = client_options("client", 1ms, 1ms);
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
  struct Restore {
    std::shared_ptr<spdlog::logger> logger;
    ~Restore() { spdlog::set_default_logger(logger); }
  } restore{previous};
  SocketEndpoint e(io_, o, device);
  std::string error;
  ASSERT_TRUE(e.start(error)) << error;
  run_for(100ms);  // the first attempts
  const sys::ResourceLedger before = sys::take_resource_ledger();

  // Nobody there: 3000 attempts at 1 ms.
  run_for(3000ms);
  EXPECT_EQ(e.state(), SocketEndpoint::State::kWaiting);
  EXPECT_EQ(e.counters().connections, 0u);
  const sys::ResourceLedger absent = sys::take_resource_ledger();
  EXPECT_EQ(absent.fds, before.fds);
  EXPECT_EQ(absent.mapped.count, before.mapped.count);

  // A frontend that accepts and hangs up, 2000 times.
  sys::UniqueFd listener = listen_at(o.path);
  ASSERT_TRUE(listener.valid());
  const bool cycled = run_until(
      [&] {
        while (true) {
          const sys::UniqueFd c(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
          if (!c.valid()) break;
        }
        return e.counters().disconnections >= 2000;
      },
      60s);
  ASSERT_TRUE(cycled) << e.counters().connections << " connections";
  listener.reset();
  std::filesystem::remove(o.path);
  ASSERT_TRUE(run_until([&] { return e.state() == SocketEndpoint::State::kWaiting; }, 5s));
  run_for(100ms);  // a few attempts at nothing again
  const sys::ResourceLedger after = sys::take_resource_ledger();
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.mapped.count, before.mapped.count);
  EXPECT_EQ(after.threads, before.threads);
  // And the log is not a line per attempt (before: "connected to ... peer
  // pid" on every connection).
  std::size_t lines = 0;
  for (const char c : log.str()) lines += c == '\n';
  EXPECT_LT(lines, 60u) << log.str().substr(0, 2000);
}

// A client-mode port whose frontend takes the connection and hangs up
// before any ring runs -- QEMU wanting more queue pairs than the port offers
// reads GET_QUEUE_NUM and does so -- is asked again less and less often, up
// to reconnect_max, and says why it was refused; a session whose ring ran
// starts the waits over. Before, it reconnected every 250 ms for ever.
TEST_F(SocketEndpointTest, AFrontendThatRefusesTheDeviceIsAskedLessAndLessOften) {
  IdleBackend backend;
  Device device{DeviceOptions{1, true}, backend};
  SocketEndpoint::Options o = client_options("qemu", 10ms, 160ms);
  sys::UniqueFd listener = listen_at(o.path);
  ASSERT_TRUE(listener.valid());
  SocketEndpoint e(io_, o, device);
  std::string error;
  ASSERT_TRUE(e.start(error)) << error;
  auto accept_one = [&] {
    sys::UniqueFd c;
    (void)run_until(
        [&] {
          c = sys::UniqueFd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
          return c.valid();
        },
        5s);
    return c;
  };

  // Taken and hung up on, for 1.5 s: 10, 20, 40, 80, then 160 ms apart
  // (at a steady 10 ms it would be about 150 connections).
  (void)run_until(
      [&] {
        while (sys::UniqueFd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC)).valid()) {
        }
        return false;
      },
      1500ms);
  EXPECT_GE(e.counters().connections, 5u);
  EXPECT_LE(e.counters().connections, 20u);
  ASSERT_TRUE(run_until([&] { return e.state() == SocketEndpoint::State::kWaiting; }, 5s));
  EXPECT_EQ(e.counters().failed_sessions, e.counters().disconnections);
  EXPECT_EQ(e.reconnect_delay(), 160ms);

  {  // As QEMU with more queue pairs than offered: GET_QUEUE_NUM, the reply, gone.
    testing::VhostUserChannel qemu(accept_one());
    ASSERT_TRUE(qemu.connected());
    ASSERT_TRUE(
        qemu.send_raw(static_cast<std::uint32_t>(testing::vhost_user::Request::kGetQueueNum),
                      testing::vhost_user::kVersion, {}));
    ASSERT_TRUE(run_until(
        [&] {
          pollfd p{qemu.fd(), POLLIN, 0};
          return ::poll(&p, 1, 0) == 1;
        },
        5s));
  }
  ASSERT_TRUE(run_until([&] { return e.state() == SocketEndpoint::State::kWaiting; }, 5s));
  EXPECT_NE(e.last_disconnect().find(
                "right after GET_QUEUE_NUM: it may want more than the port's 1 queue pairs"),
            std::string::npos)
      << e.last_disconnect();

  {  // A session whose ring runs.
    testing::VhostUserChannel frontend(accept_one());
    ASSERT_TRUE(frontend.connected());
    ASSERT_NO_FATAL_FAILURE(run_one_ring(frontend, device));
  }
  ASSERT_TRUE(run_until([&] { return e.state() == SocketEndpoint::State::kWaiting; }, 5s));
  EXPECT_EQ(e.reconnect_delay(), 10ms) << "a session that ran starts the waits over";
  EXPECT_EQ(e.last_disconnect(), "frontend closed the connection");
}

}  // namespace
}  // namespace xdpvhost::vhost

// The Frontend's message sequence, checked against a scripted peer that
// records what came over the socket, answers like a backend would, maps the
// memory table and finds the rings through it (so the table, the user
// addresses and the ring layout are checked end to end).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "frontend/frontend.hpp"
#include "frontend/loopback_device.hpp"

namespace xdpvhost::testing {
namespace {

using namespace std::chrono_literals;
using vhost_user::ProtocolFeature;
using vhost_user::Request;
using virtio::Feature;

constexpr std::uint64_t kOffered =
    virtio::bit(Feature::kVersion1) | virtio::bit(Feature::kNetMrgRxbuf) |
    virtio::bit(Feature::kRingEventIdx) | virtio::bit(Feature::kRingIndirectDesc) |
    virtio::bit(Feature::kNetCsum) | virtio::bit(Feature::kNetGuestCsum) |
    virtio::bit(Feature::kNetMtu) | virtio::bit(Feature::kNetMq) |
    virtio::bit(Feature::kRingPacked) | virtio::bit(Feature::kVhostUserProtocolFeatures);

constexpr std::uint64_t kProtocol =
    vhost_user::bit(ProtocolFeature::kMq) | vhost_user::bit(ProtocolFeature::kReplyAck) |
    vhost_user::bit(ProtocolFeature::kStatus) | vhost_user::bit(ProtocolFeature::kBackendReq) |
    vhost_user::bit(ProtocolFeature::kNetMtu) |
    vhost_user::bit(ProtocolFeature::kInbandNotifications);

// What the peer saw, one line per message: name, then the ring index and
// value where the message has them.
std::string describe(const VhostUserMessage& m) {
  std::string s = vhost_user::request_name(m.request);
  switch (static_cast<Request>(m.request)) {
    case Request::kSetVringNum:
    case Request::kSetVringBase:
    case Request::kGetVringBase:
    case Request::kSetVringEnable: {
      auto st = m.vring_state();
      s.append(" ").append(std::to_string(st->index)).append(" ").append(std::to_string(st->num));
      break;
    }
    case Request::kSetVringKick:
    case Request::kSetVringCall:
    case Request::kSetVringErr:
      s.append(" ").append(std::to_string(*m.u64() & 0xff));
      break;
    case Request::kSetVringAddr: {
      vhost_user::VringAddr a;
      std::memcpy(&a, m.payload.data(), sizeof a);
      s.append(" ").append(std::to_string(a.index));
      break;
    }
    case Request::kSetStatus:
    case Request::kNetSetMtu:
      s.append(" ").append(std::to_string(*m.u64()));
      break;
    default:
      break;
  }
  return s;
}

class ScriptedBackend {
 public:
  struct Config {
    std::uint64_t features = kOffered;
    std::uint64_t protocol = kProtocol;
    std::uint64_t queue_num = 4;
    std::uint32_t nack_request = 0;  // answer need_reply for this one with 1
    bool silent = false;             // never answer anything
  };

  explicit ScriptedBackend(Config config) : config_(config) {}
  ~ScriptedBackend() { join(); }

  // Serve on an already connected socket, in a thread.
  void serve(sys::UniqueFd socket) {
    thread_ = std::thread([this, s = std::move(socket)]() mutable { run(std::move(s)); });
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

  std::vector<std::string> log() {
    std::lock_guard lock(mutex_);
    return log_;
  }
  std::vector<VhostUserMessage> take_messages() {
    std::lock_guard lock(mutex_);
    return std::move(messages_);
  }
  void clear() {
    std::lock_guard lock(mutex_);
    log_.clear();
    messages_.clear();
  }
  std::uint32_t backend_req_fds() const { return backend_req_fds_; }

 private:
  struct Mapping {
    vhost_user::MemoryRegion region;
    std::uint8_t* base;  // mapping of the fd from offset 0
    std::size_t length;
  };

  std::uint8_t* translate_uva(std::uint64_t uva, std::size_t len) {
    for (const Mapping& m : mappings_) {
      if (uva >= m.region.userspace_addr &&
          uva - m.region.userspace_addr + len <= m.region.memory_size) {
        return m.base + m.region.mmap_offset + (uva - m.region.userspace_addr);
      }
    }
    return nullptr;
  }

  void run(sys::UniqueFd socket) {
    VhostUserChannel ch(std::move(socket));
    for (;;) {
      auto msg = ch.receive(10s);
      if (!msg) break;
      {
        std::lock_guard lock(mutex_);
        log_.push_back(describe(*msg));
      }
      if (config_.silent) continue;
      handle(ch, *msg);
      std::lock_guard lock(mutex_);
      messages_.push_back(std::move(*msg));
    }
    for (Mapping& m : mappings_) ::munmap(m.base, m.length);
  }

  void reply(VhostUserChannel& ch, const VhostUserMessage& m, const void* data, std::size_t len) {
    ch.send_raw(m.request, vhost_user::kVersion | vhost_user::kFlagReply,
                std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(data), len));
  }
  void reply_u64(VhostUserChannel& ch, const VhostUserMessage& m, std::uint64_t v) {
    reply(ch, m, &v, 8);
  }

  void handle(VhostUserChannel& ch, VhostUserMessage& m) {
    switch (static_cast<Request>(m.request)) {
      case Request::kGetFeatures:
        return reply_u64(ch, m, config_.features);
      case Request::kGetProtocolFeatures:
        return reply_u64(ch, m, config_.protocol);
      case Request::kGetQueueNum:
        return reply_u64(ch, m, config_.queue_num);
      case Request::kGetMaxMemSlots:
        return reply_u64(ch, m, 32);
      case Request::kGetStatus:
        return reply_u64(ch, m, status_);
      case Request::kSetStatus:
        status_ = static_cast<std::uint8_t>(*m.u64());
        break;
      case Request::kSetBackendReqFd:
        backend_req_fds_ += static_cast<std::uint32_t>(m.fds.size());
        break;
      case Request::kSetMemTable: {
        for (Mapping& old : mappings_) ::munmap(old.base, old.length);
        mappings_.clear();
        std::uint32_t n;
        std::memcpy(&n, m.payload.data(), 4);
        for (std::uint32_t i = 0; i < n && i < m.fds.size(); ++i) {
          vhost_user::MemoryRegion r;
          std::memcpy(&r, m.payload.data() + 8 + 32 * i, 32);
          map_region(r, m.fds[i].get());
        }
        break;
      }
      case Request::kAddMemReg: {
        vhost_user::SingleMemoryRegion r;
        std::memcpy(&r, m.payload.data(), sizeof r);
        if (!m.fds.empty()) map_region(r.region, m.fds[0].get());
        break;
      }
      case Request::kSetVringAddr: {
        vhost_user::VringAddr a;
        std::memcpy(&a, m.payload.data(), sizeof a);
        if (a.index < 16) avail_[a.index] = translate_uva(a.avail_user_addr, 4);
        break;
      }
      case Request::kGetVringBase: {
        // Stop the ring: report the avail index as seen through our own
        // mapping of the ring's user address.
        auto st = *m.vring_state();
        std::uint16_t idx = 0xdead;
        if (st.index < 16 && avail_[st.index] != nullptr) {
          std::memcpy(&idx, avail_[st.index] + 2, 2);
        }
        const vhost_user::VringState out{st.index, idx};
        return reply(ch, m, &out, sizeof out);
      }
      default:
        break;
    }
    if (m.flags & vhost_user::kFlagNeedReply) {
      reply_u64(ch, m, m.request == config_.nack_request ? 1 : 0);
    }
  }

  void map_region(const vhost_user::MemoryRegion& r, int fd) {
    const std::size_t length = r.mmap_offset + r.memory_size;
    void* p = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) mappings_.push_back({r, static_cast<std::uint8_t*>(p), length});
  }

  Config config_;
  std::thread thread_;
  std::mutex mutex_;
  std::vector<std::string> log_;
  std::vector<VhostUserMessage> messages_;
  std::vector<Mapping> mappings_;
  std::uint8_t* avail_[16] = {};
  std::uint8_t status_ = 0;
  std::atomic<std::uint32_t> backend_req_fds_{0};
};

// Sockets of one test, in a directory removed afterwards.
class FrontendSequence : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/xdpvhost-frontend-test/seq-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  const std::string& socket_dir() const { return dir_; }

 private:
  std::string dir_;
};

// A listening socket standing for a backend in server mode.
struct Listener {
  explicit Listener(const std::string& path) : path(path) {
    ::unlink(path.c_str());
    fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(fd.get(), 4) != 0) {
      std::abort();
    }
  }
  ~Listener() { ::unlink(path.c_str()); }
  sys::UniqueFd accept() {
    return sys::UniqueFd(::accept4(fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
  }
  std::string path;
  sys::UniqueFd fd;
};

// Connection setup + start for one pair, as QEMU 7.2 sends them.
std::vector<std::string> expected_single_pair_start() {
  return {"GET_FEATURES",
          "GET_PROTOCOL_FEATURES",
          "SET_PROTOCOL_FEATURES",
          "GET_QUEUE_NUM",
          "SET_SLAVE_REQ_FD",
          "SET_OWNER",
          "GET_FEATURES",
          "SET_VRING_CALL 0",
          "SET_VRING_ERR 0",
          "SET_VRING_CALL 1",
          "SET_VRING_ERR 1",
          "SET_VRING_ENABLE 0 1",
          "SET_VRING_ENABLE 1 1",
          "SET_VRING_ENABLE 0 1",
          "SET_VRING_ENABLE 1 1",
          "SET_FEATURES",
          "GET_STATUS",
          "SET_STATUS 8",
          "SET_MEM_TABLE",
          "SET_VRING_NUM 0 256",
          "SET_VRING_BASE 0 0",
          "SET_VRING_ADDR 0",
          "SET_VRING_KICK 0",
          "SET_VRING_CALL 0",
          "SET_VRING_NUM 1 256",
          "SET_VRING_BASE 1 0",
          "SET_VRING_ADDR 1",
          "SET_VRING_KICK 1",
          "SET_VRING_CALL 1",
          "GET_STATUS",
          "SET_STATUS 15"};
}

TEST_F(FrontendSequence, ClientRoleFollowsQemu) {
  const std::string path = socket_dir() + "/client.sock";
  Listener listener(path);
  ScriptedBackend backend({});
  Frontend fe(FrontendOptions{.socket_path = path, .role = Role::kClient});
  ASSERT_TRUE(fe.connect()) << fe.last_error();
  backend.serve(listener.accept());
  ASSERT_TRUE(fe.negotiate()) << fe.last_error();
  ASSERT_TRUE(fe.stop()) << fe.last_error();  // a get: everything before it was handled

  auto log = backend.log();
  auto expected = expected_single_pair_start();
  expected.insert(expected.end(), {"SET_STATUS 0", "GET_VRING_BASE 0 0", "GET_VRING_BASE 1 0"});
  EXPECT_THAT(log, ::testing::ElementsAreArray(expected));

  // What was negotiated.
  const std::uint64_t acked =
      kOffered & ~virtio::bit(Feature::kRingPacked) & ~virtio::bit(Feature::kNetMq);
  EXPECT_EQ(fe.acked_features(), acked);
  EXPECT_EQ(fe.acked_protocol_features(),
            kProtocol & ~vhost_user::bit(ProtocolFeature::kInbandNotifications));
  EXPECT_EQ(fe.queue_num(), 4u);
  EXPECT_EQ(backend.backend_req_fds(), 1u);
  EXPECT_GE(fe.backend_request_fd(), 0);

  // Flags and fds as QEMU sends them.
  for (const VhostUserMessage& m : backend.take_messages()) {
    const auto req = static_cast<Request>(m.request);
    const bool need_reply = (m.flags & vhost_user::kFlagNeedReply) != 0;
    EXPECT_EQ(need_reply, req == Request::kSetMemTable || req == Request::kSetBackendReqFd)
        << vhost_user::request_name(m.request);
    EXPECT_EQ(m.flags & vhost_user::kVersionMask, vhost_user::kVersion);
    const bool carries_fd = req == Request::kSetMemTable || req == Request::kSetBackendReqFd ||
                            req == Request::kSetVringKick || req == Request::kSetVringCall ||
                            req == Request::kSetVringErr;
    EXPECT_EQ(m.fds.size(), carries_fd ? 1u : 0u) << vhost_user::request_name(m.request);
    if (req == Request::kSetFeatures) {
      EXPECT_EQ(m.u64(), acked);
    }
    if (req == Request::kSetVringAddr) {
      vhost_user::VringAddr a;
      std::memcpy(&a, m.payload.data(), sizeof a);
      DriverQueue& q = fe.queue(static_cast<std::uint16_t>(a.index));
      EXPECT_EQ(a.desc_user_addr, fe.memory().user_addr_of(q.desc_gpa()));
      EXPECT_EQ(a.avail_user_addr, fe.memory().user_addr_of(q.avail_gpa()));
      EXPECT_EQ(a.used_user_addr, fe.memory().user_addr_of(q.used_gpa()));
      EXPECT_NE(a.desc_user_addr, q.desc_gpa());
      EXPECT_EQ(a.log_guest_addr, q.used_gpa());
    }
  }
  fe.disconnect();
  backend.join();
}

TEST_F(FrontendSequence, StopReportsBasesAndRebootStartsFromZero) {
  const std::string path = socket_dir() + "/reboot.sock";
  Listener listener(path);
  ScriptedBackend backend({});
  Frontend fe(FrontendOptions{.socket_path = path});
  ASSERT_TRUE(fe.connect());
  backend.serve(listener.accept());
  ASSERT_TRUE(fe.negotiate()) << fe.last_error();
  ASSERT_EQ(fe.post_rx_buffers(5, 2048), 5u);
  const std::vector<std::uint8_t> frame(60, 0xab);
  ASSERT_TRUE(fe.send_frame(frame));
  ASSERT_TRUE(fe.send_frame(frame));

  // The peer reads the avail indices through its own mapping of the table.
  auto bases = fe.stop();
  ASSERT_TRUE(bases.has_value()) << fe.last_error();
  EXPECT_EQ(*bases, (std::vector<std::uint16_t>{5, 2}));
  EXPECT_EQ(fe.rx_queue().device_base(), 5);
  EXPECT_FALSE(fe.started());

  // Restart without reset resumes from the bases.
  backend.clear();
  ASSERT_TRUE(fe.start()) << fe.last_error();
  ASSERT_TRUE(fe.stop());
  auto log = backend.log();
  EXPECT_NE(std::find(log.begin(), log.end(), "SET_VRING_BASE 0 5"), log.end());
  EXPECT_NE(std::find(log.begin(), log.end(), "SET_VRING_BASE 1 2"), log.end());

  // Reboot: rings zeroed, bases 0, the driver-features and start parts again.
  backend.clear();
  NegotiateOptions changed;
  changed.mrg_rxbuf = false;
  changed.event_idx = false;
  ASSERT_TRUE(fe.reset_and_renegotiate(changed)) << fe.last_error();
  EXPECT_FALSE(virtio::has(fe.acked_features(), Feature::kNetMrgRxbuf));
  EXPECT_FALSE(fe.rx_queue().event_idx());
  EXPECT_EQ(fe.rx_queue().avail_idx(), 0);
  ASSERT_TRUE(fe.stop());
  const std::vector<std::string> expected{
      "SET_VRING_ENABLE 0 1", "SET_VRING_ENABLE 1 1", "SET_VRING_ENABLE 0 1",
      "SET_VRING_ENABLE 1 1", "SET_FEATURES",         "GET_STATUS",
      "SET_STATUS 8",         "SET_MEM_TABLE",        "SET_VRING_NUM 0 256",
      "SET_VRING_BASE 0 0",   "SET_VRING_ADDR 0",     "SET_VRING_KICK 0",
      "SET_VRING_CALL 0",     "SET_VRING_NUM 1 256",  "SET_VRING_BASE 1 0",
      "SET_VRING_ADDR 1",     "SET_VRING_KICK 1",     "SET_VRING_CALL 1",
      "GET_STATUS",           "SET_STATUS 15",        "SET_STATUS 0",
      "GET_VRING_BASE 0 0",   "GET_VRING_BASE 1 0"};
  EXPECT_THAT(backend.log(), ::testing::ElementsAreArray(expected));
  fe.disconnect();
  backend.join();
}

TEST_F(FrontendSequence, ServerRoleTwoPairsTwoRegions) {
  const std::string path = socket_dir() + "/server.sock";
  ScriptedBackend backend({});
  Frontend fe(FrontendOptions{.socket_path = path,
                              .role = Role::kServer,
                              .memory = ArenaOptions{.size = 32u << 20, .two_regions = true}});
  fe.listen();
  // The backend connects to us.
  sys::UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  backend.serve(std::move(s));
  ASSERT_TRUE(fe.connect()) << fe.last_error();
  NegotiateOptions opts;
  opts.queue_pairs = 2;
  opts.queue_size = 64;
  opts.mtu = 1500;
  ASSERT_TRUE(fe.negotiate(opts)) << fe.last_error();
  EXPECT_TRUE(virtio::has(fe.acked_features(), Feature::kNetMq));
  ASSERT_EQ(fe.queue_pairs(), 2);
  ASSERT_EQ(fe.post_rx_buffers(3, 1024), 3u);
  ASSERT_EQ(fe.net(1).post_rx_buffers(7, 1024), 7u);
  auto bases = fe.stop();
  ASSERT_TRUE(bases.has_value()) << fe.last_error();
  EXPECT_EQ(*bases, (std::vector<std::uint16_t>{3, 0, 7, 0}));

  const std::vector<std::string> pair_setup_0{
      "GET_FEATURES",     "GET_PROTOCOL_FEATURES", "SET_PROTOCOL_FEATURES",
      "GET_QUEUE_NUM",    "SET_SLAVE_REQ_FD",      "SET_OWNER",
      "GET_FEATURES",     "SET_VRING_CALL 0",      "SET_VRING_ERR 0",
      "SET_VRING_CALL 1", "SET_VRING_ERR 1"};
  const std::vector<std::string> pair_setup_1{
      "GET_FEATURES",     "GET_PROTOCOL_FEATURES", "SET_PROTOCOL_FEATURES", "GET_QUEUE_NUM",
      "SET_OWNER",        "GET_FEATURES",          "SET_VRING_CALL 2",      "SET_VRING_ERR 2",
      "SET_VRING_CALL 3", "SET_VRING_ERR 3"};
  std::vector<std::string> expected = pair_setup_0;
  expected.insert(expected.end(), pair_setup_1.begin(), pair_setup_1.end());
  expected.insert(
      expected.end(),
      {"SET_VRING_ENABLE 0 1", "SET_VRING_ENABLE 1 1", "SET_VRING_ENABLE 2 0",
       "SET_VRING_ENABLE 3 0", "NET_SET_MTU 1500",
       // pair 0
       "SET_VRING_ENABLE 0 1", "SET_VRING_ENABLE 1 1", "SET_FEATURES", "GET_STATUS", "SET_STATUS 8",
       "SET_MEM_TABLE", "SET_VRING_NUM 0 64", "SET_VRING_BASE 0 0", "SET_VRING_ADDR 0",
       "SET_VRING_KICK 0", "SET_VRING_CALL 0", "SET_VRING_NUM 1 64", "SET_VRING_BASE 1 0",
       "SET_VRING_ADDR 1", "SET_VRING_KICK 1", "SET_VRING_CALL 1",
       // pair 1 (not enabled yet), then DRIVER_OK
       "SET_FEATURES", "GET_STATUS", "SET_STATUS 8", "SET_MEM_TABLE", "SET_VRING_NUM 2 64",
       "SET_VRING_BASE 2 0", "SET_VRING_ADDR 2", "SET_VRING_KICK 2", "SET_VRING_CALL 2",
       "SET_VRING_NUM 3 64", "SET_VRING_BASE 3 0", "SET_VRING_ADDR 3", "SET_VRING_KICK 3",
       "SET_VRING_CALL 3", "GET_STATUS", "SET_STATUS 15",
       // the guest enables pair 1 (VIRTIO_NET_CTRL_MQ)
       "SET_VRING_ENABLE 2 1", "SET_VRING_ENABLE 3 1",
       // stop: status only with the last pair
       "GET_VRING_BASE 0 0", "GET_VRING_BASE 1 0", "SET_STATUS 0", "GET_VRING_BASE 2 0",
       "GET_VRING_BASE 3 0"});
  EXPECT_THAT(backend.log(), ::testing::ElementsAreArray(expected));

  for (const VhostUserMessage& m : backend.take_messages()) {
    if (m.request != vhost_user::to_u32(Request::kSetMemTable)) continue;
    ASSERT_EQ(m.fds.size(), 2u);
    vhost_user::MemoryRegion r[2];
    std::memcpy(r, m.payload.data() + 8, sizeof r);
    EXPECT_EQ(r[0].guest_phys_addr, 0u);
    EXPECT_EQ(r[1].guest_phys_addr, std::uint64_t{4} << 30);
    EXPECT_EQ(r[1].mmap_offset, 16u << 20);
    EXPECT_EQ(r[1].userspace_addr, r[0].userspace_addr + (16u << 20));
  }
  fe.disconnect();
  backend.join();
}

TEST_F(FrontendSequence, WithoutProtocolFeatures) {
  const std::string path = socket_dir() + "/legacy.sock";
  Listener listener(path);
  ScriptedBackend backend(
      {.features = virtio::bit(Feature::kVersion1) | virtio::bit(Feature::kNetMrgRxbuf),
       .protocol = 0});
  Frontend fe(FrontendOptions{.socket_path = path});
  ASSERT_TRUE(fe.connect());
  backend.serve(listener.accept());
  NegotiateOptions opts;
  opts.queue_size = 32;
  ASSERT_TRUE(fe.negotiate(opts)) << fe.last_error();
  ASSERT_TRUE(fe.stop());
  const std::vector<std::string> expected{
      "GET_FEATURES",      "SET_OWNER",          "GET_FEATURES",       "SET_VRING_CALL 0",
      "SET_VRING_ERR 0",   "SET_VRING_CALL 1",   "SET_VRING_ERR 1",    "SET_FEATURES",
      "SET_MEM_TABLE",     "SET_VRING_NUM 0 32", "SET_VRING_BASE 0 0", "SET_VRING_ADDR 0",
      "SET_VRING_KICK 0",  "SET_VRING_CALL 0",   "SET_VRING_NUM 1 32", "SET_VRING_BASE 1 0",
      "SET_VRING_ADDR 1",  "SET_VRING_KICK 1",   "SET_VRING_CALL 1",   "GET_VRING_BASE 0 0",
      "GET_VRING_BASE 1 0"};
  EXPECT_THAT(backend.log(), ::testing::ElementsAreArray(expected));
  for (const VhostUserMessage& m : backend.take_messages()) {
    EXPECT_EQ(m.flags & vhost_user::kFlagNeedReply, 0u);
  }
  fe.disconnect();
  backend.join();
}

TEST_F(FrontendSequence, ConfigureMemSlotsUsesAddMemRegOnce) {
  const std::string path = socket_dir() + "/memslots.sock";
  Listener listener(path);
  ScriptedBackend backend(
      {.protocol = kProtocol | vhost_user::bit(ProtocolFeature::kConfigureMemSlots)});
  Frontend fe(FrontendOptions{.socket_path = path,
                              .memory = ArenaOptions{.size = 16u << 20, .two_regions = true}});
  ASSERT_TRUE(fe.connect());
  backend.serve(listener.accept());
  NegotiateOptions opts;
  opts.queue_pairs = 2;
  opts.queue_size = 16;
  ASSERT_TRUE(fe.negotiate(opts)) << fe.last_error();
  ASSERT_EQ(fe.post_rx_buffers(2, 512), 2u);
  auto bases = fe.stop();  // the peer found the rings through the added regions
  ASSERT_TRUE(bases.has_value());
  EXPECT_EQ((*bases)[0], 2);
  auto log = backend.log();
  EXPECT_EQ(std::count(log.begin(), log.end(), "GET_MAX_MEM_SLOTS"), 2);
  EXPECT_EQ(std::count(log.begin(), log.end(), "ADD_MEM_REG"), 2);  // two regions, once
  EXPECT_EQ(std::count(log.begin(), log.end(), "SET_MEM_TABLE"), 0);
  fe.disconnect();
  backend.join();
}

TEST_F(FrontendSequence, NackedMemTableFailsNegotiation) {
  const std::string path = socket_dir() + "/nack.sock";
  Listener listener(path);
  ScriptedBackend backend({.nack_request = vhost_user::to_u32(Request::kSetMemTable)});
  Frontend fe(FrontendOptions{.socket_path = path});
  ASSERT_TRUE(fe.connect());
  backend.serve(listener.accept());
  EXPECT_FALSE(fe.negotiate());
  EXPECT_NE(fe.last_error().find("SET_MEM_TABLE"), std::string::npos) << fe.last_error();
  EXPECT_EQ(fe.channel().last_ack(), 1u);
  fe.disconnect();
  backend.join();
}

TEST_F(FrontendSequence, SilentBackendTimesOut) {
  const std::string path = socket_dir() + "/silent.sock";
  Listener listener(path);
  ScriptedBackend backend({.silent = true});
  Frontend fe(FrontendOptions{.socket_path = path, .timeout = 200ms});
  ASSERT_TRUE(fe.connect());
  backend.serve(listener.accept());
  EXPECT_FALSE(fe.negotiate());
  EXPECT_NE(fe.last_error().find("GET_FEATURES"), std::string::npos) << fe.last_error();
  fe.disconnect();
  backend.join();
}

TEST_F(FrontendSequence, ClientConnectTimesOutWithoutBackend) {
  Frontend fe(FrontendOptions{.socket_path = socket_dir() + "/nobody.sock", .timeout = 100ms});
  EXPECT_FALSE(fe.connect());
  EXPECT_FALSE(fe.last_error().empty());
}

TEST_F(FrontendSequence, ReconnectResumesFromUsedIndex) {
  const std::string path = socket_dir() + "/resume.sock";
  Listener listener(path);
  auto backend = std::make_unique<ScriptedBackend>(ScriptedBackend::Config{});
  Frontend fe(FrontendOptions{.socket_path = path});
  ASSERT_TRUE(fe.connect());
  backend->serve(listener.accept());
  ASSERT_TRUE(fe.negotiate()) << fe.last_error();
  ASSERT_EQ(fe.post_rx_buffers(4, 1024), 4u);
  // Device side uses two of them, then the backend goes away.
  LoopbackDevice dev(fe.memory(), fe.rx_queue());
  for (int i = 0; i < 2; ++i) {
    auto c = dev.pop();
    ASSERT_TRUE(c.has_value());
    dev.push_used(c->head, 100);
  }
  dev.publish_used();
  fe.disconnect();
  backend->join();
  EXPECT_EQ(fe.rx_queue().device_base(), 2);  // QEMU: last_avail_idx = used idx

  backend = std::make_unique<ScriptedBackend>(ScriptedBackend::Config{});
  ASSERT_TRUE(fe.connect());
  backend->serve(listener.accept());
  ASSERT_TRUE(fe.negotiate({}, /*resume=*/true)) << fe.last_error();
  auto log = backend->log();
  EXPECT_NE(std::find(log.begin(), log.end(), "SET_VRING_BASE 0 2"), log.end());
  // The two chains still in flight stay posted.
  EXPECT_EQ(fe.rx_queue().avail_idx(), 4);
  fe.disconnect();
  backend->join();
}

TEST_F(FrontendSequence, StaleCallFdSignalsAreCounted) {
  const std::string path = socket_dir() + "/stale.sock";
  Listener listener(path);
  ScriptedBackend backend({});
  Frontend fe(FrontendOptions{.socket_path = path});
  ASSERT_TRUE(fe.connect());
  backend.serve(listener.accept());
  ASSERT_TRUE(fe.negotiate()) << fe.last_error();
  ASSERT_TRUE(fe.stop());
  // The first SET_VRING_CALL of ring 0 carried the placeholder fd.
  for (VhostUserMessage& m : backend.take_messages()) {
    if (m.request == vhost_user::to_u32(Request::kSetVringCall) && *m.u64() == 0) {
      sys::EventFd placeholder(std::move(m.fds[0]));
      placeholder.notify();
      break;
    }
  }
  EXPECT_EQ(fe.stale_call_signals(), 1u);
  EXPECT_EQ(fe.rx_queue().drain_interrupts(), 0u);
  fe.disconnect();
  backend.join();
}

}  // namespace
}  // namespace xdpvhost::testing

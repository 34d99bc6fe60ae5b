// Malformed vhost-user messages: refused (NACKed with REPLY_ACK) without side
// effects while the connection keeps working, or -- when framing is lost --
// the connection closed, the port back to waiting, and a new frontend served.
// No fd the frontend passes is ever leaked.

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "daemon_test.hpp"
#include "guest_traffic.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::integration {
namespace {

namespace vu = fe::vhost_user;
using vu::Request;

const fe::MacAddress kMacG = fe::make_mac(1);
const fe::MacAddress kMacPeer = fe::make_mac(2);

template <class T>
std::vector<std::uint8_t> bytes_of(const T& v) {
  std::vector<std::uint8_t> b(sizeof v);
  std::memcpy(b.data(), &v, sizeof v);
  return b;
}
std::vector<std::uint8_t> u64(std::uint64_t v) {
  return bytes_of(v);
}
std::vector<std::uint8_t> resized(std::vector<std::uint8_t> b, std::size_t n) {
  b.resize(n, 0);
  return b;
}

sys::UniqueFd make_eventfd() {
  return sys::UniqueFd(::eventfd(0, EFD_CLOEXEC));
}
sys::UniqueFd make_memfd(std::size_t size = 1 << 20) {
  sys::UniqueFd fd(::memfd_create("xdpvhost-integ", MFD_CLOEXEC));
  if (fd.valid() && ::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) fd.reset();
  return fd;
}

std::vector<std::uint8_t> memory_table(const std::vector<vu::MemoryRegion>& regions,
                                       std::uint32_t nregions) {
  std::vector<std::uint8_t> p(8 + 32 * regions.size());
  const vu::MemoryTableHead head{nregions, 0};
  std::memcpy(p.data(), &head, 8);
  for (std::size_t i = 0; i < regions.size(); ++i)
    std::memcpy(p.data() + 8 + 32 * i, &regions[i], 32);
  return p;
}

class MalformedMessages : public DaemonTest {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    // Pure event mode: a lost kick fd would stall the datapath, not hide.
    start_daemon({port("vm1", 1), port("vm2", 2)}, {{"busy_poll_us", 0}});
    g_ = connect_receiving_guest("vm1");
    peer_ = connect_receiving_guest("vm2");
    ASSERT_TRUE(exchange(*g_, kMacG, *peer_, kMacPeer, 5, 0));
    before_ = port_get("vm1");
  }

  // Sends with need_reply and expects a NACK (non-zero ack).
  void expect_refused(std::uint32_t request, const std::vector<std::uint8_t>& payload,
                      const std::vector<int>& fds = {}, const char* what = "") {
    const auto ack = g_->channel().send_raw_await_ack(request, payload, fds);
    ASSERT_TRUE(ack.has_value()) << what << ": " << g_->channel().last_error();
    // GET_VRING_BASE has a reply of its own, which the frontend waits for
    // even without need_reply: a refusal is answered with zeros (index 0,
    // base 0) rather than an ack. No side effect is checked by the callers.
    if (request == static_cast<std::uint32_t>(vu::Request::kGetVringBase)) {
      EXPECT_EQ(*ack, 0u) << what << ": a refused GET_VRING_BASE is answered with zeros";
      return;
    }
    EXPECT_NE(*ack, 0u) << what << " (" << vu::request_name(request) << ") was accepted";
  }

  // Nothing the refused messages carried changed the port.
  void expect_unchanged() {
    const auto now = port_get("vm1");
    EXPECT_EQ(now.at("state"), "running");
    EXPECT_EQ(now.at("features"), before_.at("features"));
    EXPECT_EQ(now.at("protocol_features"), before_.at("protocol_features"));
    EXPECT_EQ(now.at("queues"), before_.at("queues"));
    const auto kicks = counter("vm1", "kicks");
    auto& g_rx = g_->rx_queue();
    g_rx.drain_interrupts();
    const auto interrupts = g_rx.interrupts();
    EXPECT_TRUE(exchange(*g_, kMacG, *peer_, kMacPeer, 20, ++round_ * 1000));
    // Kicks still come through the same kick fd, interrupts through the same call fd.
    EXPECT_TRUE(wait_until([&] { return counter("vm1", "kicks") > kicks; }));
    EXPECT_TRUE(wait_until([&] {
      g_rx.drain_interrupts();
      return g_rx.interrupts() > interrupts;
    })) << "no interrupt on vm1's receive queue";
    EXPECT_EQ(g_->channel().get_features(), std::optional<std::uint64_t>(g_->offered_features()));
  }

  std::unique_ptr<fe::Frontend> g_, peer_;
  nlohmann::json before_;
  std::uint32_t round_ = 0;
};

TEST_F(MalformedMessages, UnknownRequestsAreNackedAndTheConnectionStaysUsable) {
  expect_refused(77, {}, {}, "request 77");
  expect_refused(1000, u64(5), {}, "request 1000");
  expect_refused(0, {}, {}, "request 0");
  // Known but not supported here.
  expect_refused(vu::to_u32(Request::kPostcopyAdvise), {}, {}, "POSTCOPY_ADVISE");
  expect_refused(vu::to_u32(Request::kSendRarp), resized({}, 8), {}, "SEND_RARP of MAC 0");
  // Without need_reply nothing comes back: the next reply read is GET_FEATURES'.
  ASSERT_TRUE(g_->channel().send_raw(78, vu::kVersion, u64(1)));
  ASSERT_TRUE(g_->channel().send_raw(0xffffffffu, vu::kVersion, {}));
  expect_unchanged();
}

TEST_F(MalformedMessages, WrongPayloadSizesAreRefusedWithoutSideEffects) {
  const auto R = [](Request r) { return vu::to_u32(r); };
  expect_refused(R(Request::kSetFeatures), resized({}, 4), {}, "SET_FEATURES 4 bytes");
  expect_refused(R(Request::kSetFeatures), resized({}, 16), {}, "SET_FEATURES 16 bytes");
  expect_refused(R(Request::kSetProtocolFeatures), resized({}, 4), {},
                 "SET_PROTOCOL_FEATURES 4 bytes");
  expect_refused(R(Request::kSetVringNum), resized(bytes_of(vu::VringState{0, 1024}), 12), {},
                 "SET_VRING_NUM 12 bytes");
  expect_refused(R(Request::kSetVringNum), resized(bytes_of(vu::VringState{0, 1024}), 4), {},
                 "SET_VRING_NUM 4 bytes");
  expect_refused(R(Request::kSetVringBase), resized(bytes_of(vu::VringState{1, 7}), 4), {},
                 "SET_VRING_BASE 4 bytes");
  vu::VringAddr addr{};
  addr.index = 1;
  expect_refused(R(Request::kSetVringAddr), resized(bytes_of(addr), 39), {},
                 "SET_VRING_ADDR 39 bytes");
  expect_refused(R(Request::kSetVringAddr), resized(bytes_of(addr), 48), {},
                 "SET_VRING_ADDR 48 bytes");
  expect_refused(R(Request::kSetVringEnable), resized(bytes_of(vu::VringState{0, 0}), 16), {},
                 "SET_VRING_ENABLE 16 bytes");
  expect_refused(R(Request::kSetStatus), resized({}, 4), {}, "SET_STATUS 4 bytes");
  // GET_VRING_BASE would stop the ring: a bad one must not.
  expect_refused(R(Request::kGetVringBase), resized(bytes_of(vu::VringState{1, 0}), 4), {},
                 "GET_VRING_BASE 4 bytes");
  expect_refused(R(Request::kGetVringBase), resized(bytes_of(vu::VringState{1, 0}), 9), {},
                 "GET_VRING_BASE 9 bytes");
  auto kick = make_eventfd();
  expect_refused(R(Request::kSetVringKick), resized(u64(1), 4), {kick.get()},
                 "SET_VRING_KICK 4 bytes");
  // Memory tables whose size does not match nregions.
  const auto& r0 = g_->memory().regions()[0];
  const vu::MemoryRegion region{r0.guest_phys_addr, r0.size, r0.user_addr, r0.mmap_offset};
  const int mfd = g_->memory().fd();
  expect_refused(R(Request::kSetMemTable), memory_table({region, region}, 1), {mfd},
                 "SET_MEM_TABLE 2 regions, nregions 1");
  expect_refused(R(Request::kSetMemTable), memory_table({region}, 2), {mfd, mfd},
                 "SET_MEM_TABLE 1 region, nregions 2");
  expect_refused(R(Request::kSetMemTable), memory_table({}, 0), {}, "SET_MEM_TABLE 0 regions");
  expect_refused(R(Request::kSetMemTable),
                 memory_table(std::vector<vu::MemoryRegion>(9, region), 9),
                 std::vector<int>(8, mfd), "SET_MEM_TABLE 9 regions");
  expect_refused(R(Request::kSetMemTable), resized({}, 4), {}, "SET_MEM_TABLE 4 bytes");
  EXPECT_EQ(g_->channel().get_status(), g_->last_status_set());
  expect_unchanged();
}

TEST_F(MalformedMessages, MissingOrExtraFdsAreRefusedWithoutSideEffects) {
  const auto R = [](Request r) { return vu::to_u32(r); };
  auto e1 = make_eventfd();
  auto e2 = make_eventfd();
  expect_refused(R(Request::kSetVringKick), u64(1), {}, "SET_VRING_KICK without fd");
  expect_refused(R(Request::kSetVringKick), u64(1), {e1.get(), e2.get()},
                 "SET_VRING_KICK with 2 fds");
  expect_refused(R(Request::kSetVringKick), u64(1 | vu::kVringInvalidFd), {e1.get()},
                 "SET_VRING_KICK no-fd flag with an fd");
  expect_refused(R(Request::kSetVringCall), u64(0), {}, "SET_VRING_CALL without fd");
  expect_refused(R(Request::kSetVringCall), u64(0), {e1.get(), e2.get()},
                 "SET_VRING_CALL with 2 fds");
  expect_refused(R(Request::kSetVringErr), u64(1), {e1.get(), e2.get()},
                 "SET_VRING_ERR with 2 fds");
  const auto& r0 = g_->memory().regions()[0];
  const vu::MemoryRegion region{r0.guest_phys_addr, r0.size, r0.user_addr, r0.mmap_offset};
  const int mfd = g_->memory().fd();
  expect_refused(R(Request::kSetMemTable), memory_table({region}, 1), {},
                 "SET_MEM_TABLE without fd");
  expect_refused(R(Request::kSetMemTable), memory_table({region}, 1), {mfd, mfd},
                 "SET_MEM_TABLE with 2 fds");
  expect_refused(R(Request::kSetOwner), {}, {e1.get()}, "SET_OWNER with an fd");
  expect_refused(R(Request::kSetVringNum), bytes_of(vu::VringState{1, 256}), {e1.get()},
                 "SET_VRING_NUM with an fd");
  expect_unchanged();
}

TEST_F(MalformedMessages, VringIndexOutOfRangeIsRefusedWithoutSideEffects) {
  const auto R = [](Request r) { return vu::to_u32(r); };
  auto e = make_eventfd();
  for (std::uint32_t index : {2u, 3u, 15u, 16u, 255u, 0x10000u}) {
    expect_refused(R(Request::kSetVringNum), bytes_of(vu::VringState{index, 256}), {},
                   "SET_VRING_NUM");
    expect_refused(R(Request::kSetVringBase), bytes_of(vu::VringState{index, 0}), {},
                   "SET_VRING_BASE");
    expect_refused(R(Request::kSetVringEnable), bytes_of(vu::VringState{index, 1}), {},
                   "SET_VRING_ENABLE");
    expect_refused(R(Request::kGetVringBase), bytes_of(vu::VringState{index, 0}), {},
                   "GET_VRING_BASE");
    vu::VringAddr addr{};
    addr.index = index;
    expect_refused(R(Request::kSetVringAddr), bytes_of(addr), {}, "SET_VRING_ADDR");
    if (index <= 0xff) {
      expect_refused(R(Request::kSetVringKick), u64(index), {e.get()}, "SET_VRING_KICK");
      expect_refused(R(Request::kSetVringCall), u64(index), {e.get()}, "SET_VRING_CALL");
      expect_refused(R(Request::kSetVringErr), u64(index), {e.get()}, "SET_VRING_ERR");
    }
  }
  // Bits above the index and the no-fd flag.
  expect_refused(R(Request::kSetVringCall), u64(0x200 | 0), {e.get()},
                 "SET_VRING_CALL unknown bits");
  expect_refused(R(Request::kSetVringEnable), bytes_of(vu::VringState{0, 2}), {},
                 "SET_VRING_ENABLE 2");
  EXPECT_EQ(port_get("vm1").at("queues").size(), 2u);
  expect_unchanged();
}

TEST_F(MalformedMessages, RingSizeNotAPowerOfTwoIsRefusedWithoutSideEffects) {
  for (std::uint32_t num : {0u, 3u, 100u, 255u, 257u, 32769u, 65536u, 0x80000000u}) {
    expect_refused(vu::to_u32(Request::kSetVringNum), bytes_of(vu::VringState{0, num}), {},
                   ("SET_VRING_NUM " + std::to_string(num)).c_str());
    expect_refused(vu::to_u32(Request::kSetVringNum), bytes_of(vu::VringState{1, num}), {},
                   ("SET_VRING_NUM " + std::to_string(num)).c_str());
  }
  EXPECT_EQ(queue_of("vm1", 0).at("size"), 256);
  EXPECT_EQ(queue_of("vm1", 1).at("size"), 256);
  expect_unchanged();
}

// ---- framing lost: the connection goes, the socket stays ----------------------------

struct FramingCase {
  const char* name;
  std::vector<std::uint8_t> bytes;  // what is written
  int fds = 0;                      // eventfds passed along (with the first byte)
};

void PrintTo(const FramingCase& c, std::ostream* os) {
  *os << c.name;
}

// sendmsg with any number of fds (the channel's send_bytes stops at 16).
bool send_with_fds(int sock, const std::vector<std::uint8_t>& bytes, const std::vector<int>& fds) {
  iovec iov{const_cast<std::uint8_t*>(bytes.data()), bytes.size()};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  return ::sendmsg(sock, &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

std::vector<std::uint8_t> raw_header(std::uint32_t request, std::uint32_t flags,
                                     std::uint32_t size) {
  return bytes_of(vu::Header{request, flags, size});
}
std::vector<std::uint8_t> with_payload(std::vector<std::uint8_t> header, std::uint64_t value) {
  const auto p = bytes_of(value);
  header.insert(header.end(), p.begin(), p.end());
  return header;
}

class LostFraming : public DaemonTest, public ::testing::WithParamInterface<FramingCase> {};

TEST_P(LostFraming, ClosesTheConnectionAndServesTheNextFrontend) {
  start_daemon({port("vm1", 1), port("vm2", 2)});
  auto peer = connect_receiving_guest("vm2");
  {
    auto g = connect_guest("vm1");
    ASSERT_TRUE(g);
    ASSERT_EQ(port_state("vm1"), "running");
    std::vector<sys::UniqueFd> owned;
    std::vector<int> fds;
    for (int i = 0; i < GetParam().fds; ++i) {
      owned.push_back(make_eventfd());
      fds.push_back(owned.back().get());
    }
    ASSERT_TRUE(send_with_fds(g->channel().fd(), GetParam().bytes, fds));
    EXPECT_TRUE(g->channel().wait_peer_closed(10s)) << "the daemon kept the connection";
    EXPECT_TRUE(wait_until([&] { return port_state("vm1") == "waiting"; }))
        << port_get("vm1").dump();
    EXPECT_TRUE(port_get("vm1").at("queues").empty()) << port_get("vm1").dump();
  }
  auto g = connect_receiving_guest("vm1");
  EXPECT_TRUE(exchange(*g, kMacG, *peer, kMacPeer, 20, 1));
  EXPECT_EQ(port_state("vm1"), "running");
}

INSTANTIATE_TEST_SUITE_P(
    Daemon, LostFraming,
    ::testing::Values(
        FramingCase{"PayloadLargerThanAnyMessage", raw_header(1, vu::kVersion, 4096 + 64 + 1)},
        FramingCase{"PayloadOf4GiB", raw_header(1, vu::kVersion, 0xffffffffu)},
        FramingCase{"OversizedWithFds", raw_header(5, vu::kVersion, 1u << 20), 3},
        FramingCase{"Version0", raw_header(1, 0, 0)}, FramingCase{"Version2", raw_header(1, 2, 0)},
        FramingCase{"Version3WithFds", raw_header(12, 3 | vu::kFlagNeedReply, 8), 1},
        FramingCase{
            "NineFds",
            with_payload(raw_header(vu::to_u32(Request::kSetVringKick), vu::kVersion, 8), 1), 9},
        FramingCase{
            "FortyFds",
            with_payload(raw_header(vu::to_u32(Request::kSetVringKick), vu::kVersion, 8), 1), 40}),
    [](const auto& info) { return std::string(info.param.name); });

// ---- no fd leaks ---------------------------------------------------------------------

class FdLeaks : public DaemonTest {};

TEST_F(FdLeaks, TwoHundredBadMessagesLeakNoFd) {
  start_daemon({port("vm1", 1), port("vm2", 2)});
  auto peer = connect_receiving_guest("vm2");
  auto g = connect_receiving_guest("vm1");
  ASSERT_TRUE(exchange(*g, kMacG, *peer, kMacPeer, 5, 0));
  ASSERT_EQ(port_state("vm1"), "running");  // the control connection is open from here on
  const std::size_t before = daemon().open_fds();
  const auto before_list = daemon().fd_targets();
  ASSERT_GT(before, 0u);

  const auto R = [](Request r) { return vu::to_u32(r); };
  const auto& r0 = g->memory().regions()[0];
  const vu::MemoryRegion region{r0.guest_phys_addr, r0.size, r0.user_addr, r0.mmap_offset};
  const vu::MemoryRegion empty{0, 0, 0x7f0000000000, 0};
  std::size_t closed = 0;
  for (int i = 0; i < 200; ++i) {
    std::vector<sys::UniqueFd> owned;
    auto add = [&](sys::UniqueFd fd) {
      owned.push_back(std::move(fd));
      return owned.back().get();
    };
    auto& ch = g->channel();
    std::optional<std::uint64_t> ack;
    bool closes = false;
    switch (i % 10) {
      case 0:
        ack = ch.send_raw_await_ack(R(Request::kSetVringKick), u64(7),
                                    std::vector<int>{add(make_eventfd())});
        break;
      case 1:
        ack = ch.send_raw_await_ack(R(Request::kSetVringCall), u64(0),
                                    std::vector<int>{add(make_eventfd()), add(make_eventfd())});
        break;
      case 2:
        ack = ch.send_raw_await_ack(
            R(Request::kSetMemTable), memory_table({region}, 1),
            std::vector<int>{add(make_memfd()), add(make_memfd()), add(make_memfd())});
        break;
      case 3:
        ack = ch.send_raw_await_ack(R(Request::kSetMemTable), memory_table({empty}, 1),
                                    std::vector<int>{add(make_memfd())});
        break;
      case 4:
        ack = ch.send_raw_await_ack(99, u64(1),
                                    std::vector<int>{add(make_eventfd()), add(make_memfd())});
        break;
      case 5:
        ack = ch.send_raw_await_ack(R(Request::kSetVringErr), resized(u64(1), 4),
                                    std::vector<int>{add(make_eventfd())});
        break;
      case 6:  // SET_LOG_FD takes one eventfd (live migration): two are refused
        ack = ch.send_raw_await_ack(R(Request::kSetLogFd), {},
                                    std::vector<int>{add(make_eventfd()), add(make_eventfd())});
        break;
      case 7:
        ack = ch.send_raw_await_ack(R(Request::kSetBackendReqFd), {},
                                    std::vector<int>{add(make_eventfd())});
        break;
      case 8: {  // nine fds: framing refused, connection closed
        std::vector<int> fds;
        for (int k = 0; k < 9; ++k) fds.push_back(add(make_eventfd()));
        ASSERT_TRUE(ch.send_raw(R(Request::kSetVringKick), vu::kVersion, u64(1), fds));
        closes = true;
        break;
      }
      case 9: {  // bad version with fds: connection closed
        std::vector<int> fds{add(make_memfd()), add(make_eventfd())};
        ASSERT_TRUE(ch.send_bytes(raw_header(5, 0, 0), fds));
        closes = true;
        break;
      }
    }
    if (closes) {
      ASSERT_TRUE(ch.wait_peer_closed(10s)) << "message " << i;
      ++closed;
      g->disconnect();
      ASSERT_TRUE(wait_until([&] { return port_state("vm1") == "waiting"; }));
      ASSERT_TRUE(g->connect()) << g->last_error();
      ASSERT_TRUE(g->negotiate()) << g->last_error();
      post_rx(*g);
    } else {
      ASSERT_TRUE(ack.has_value()) << "message " << i << ": " << ch.last_error();
      EXPECT_NE(*ack, 0u) << "message " << i << " accepted";
    }
  }
  EXPECT_EQ(closed, 40u);
  ASSERT_TRUE(exchange(*g, kMacG, *peer, kMacPeer, 20, 1000));
  EXPECT_TRUE(wait_until([&] { return daemon().open_fds() == before; }))
      << "xdpvhostd had " << before << " fds open before, " << daemon().open_fds() << " after:\n"
      << ::testing::PrintToString(before_list) << "\n"
      << ::testing::PrintToString(daemon().fd_targets());
}

}  // namespace
}  // namespace xdpvhost::integration

// The vhost-user device state machine, message by message, as QEMU drives it.
// The backend here records what the device asks of the datapath; the real
// datapath behind it is exercised by the integration tests.

#include "vhost/device.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <map>
#include <vector>

#include "vhost/message_table.hpp"
#include "virtio/features.hpp"

namespace xdpvhost::vhost {
namespace {

using virtio::Feature;

struct RecordingBackend : DeviceBackend {
  std::map<std::uint32_t, QueueStart> running;
  int starts = 0, stops = 0;
  std::optional<RingStop> last_stop;
  std::optional<std::uint16_t> next_base = 0;  // nothing: as from a stalled thread
  std::uint32_t mtu = 0;
  void start_queue(QueueStart s) override {
    ++starts;
    running[s.vring] = std::move(s);
  }
  std::optional<std::uint16_t> stop_queue(std::uint32_t vring, RingStop why) override {
    ++stops;
    last_stop = why;
    running.erase(vring);
    return next_base;
  }
  void set_mtu(std::uint32_t m) override { mtu = m; }
  std::vector<std::array<std::uint8_t, 6>> announced;
  bool announce(const std::array<std::uint8_t, 6>& mac) override {
    announced.push_back(mac);
    return true;
  }
};

Message make(Request r, const void* payload = nullptr, std::uint32_t size = 0) {
  Message m;
  m.header = {static_cast<std::uint32_t>(r), MessageHeader::kVersion, size};
  if (size) std::memcpy(m.payload.data(), payload, size);
  return m;
}
Message u64(Request r, std::uint64_t v) {
  return make(r, &v, 8);
}
Message state(Request r, std::uint32_t index, std::uint32_t num) {
  VringState s{index, num};
  return make(r, &s, sizeof s);
}
sys::UniqueFd eventfd() {
  return sys::UniqueFd(::eventfd(0, EFD_CLOEXEC));
}

struct DeviceTest : ::testing::Test {
  RecordingBackend backend;
  Device device{DeviceOptions{1, true}, backend};
  int memfd = -1;

  void TearDown() override {
    if (memfd >= 0) ::close(memfd);
  }
  Outcome send(Message m) { return device.handle(m); }

  void negotiate(std::uint64_t features) {
    ASSERT_TRUE(send(u64(Request::kSetFeatures, features)).ok);
  }
  void mem_table() {
    memfd = ::memfd_create("guest", MFD_CLOEXEC);
    ASSERT_EQ(::ftruncate(memfd, 1 << 20), 0);
    struct {
      MemoryTableHeader h;
      MemoryRegionDesc r;
    } p{{1, 0}, {0, 1 << 20, 0x7f0000000000, 0}};
    Message m = make(Request::kSetMemTable, &p, sizeof p);
    m.fds.emplace_back(::dup(memfd));
    auto o = send(std::move(m));
    ASSERT_TRUE(o.ok) << o.error;
  }
  // The dirty log is shared memory only under LOG_SHMFD, as QEMU migrates.
  void log_shmfd() {
    ASSERT_TRUE(send(u64(Request::kSetProtocolFeatures, bit(ProtocolFeature::kLogShmfd))).ok);
  }
  void ring(std::uint32_t index, bool kick = true) {
    ASSERT_TRUE(send(state(Request::kSetVringNum, index, 256)).ok);
    ASSERT_TRUE(send(state(Request::kSetVringBase, index, 0)).ok);
    VringAddress a{index, 0, 0x7f0000000000, 0x7f0000002000, 0x7f0000001000, 0};
    ASSERT_TRUE(send(make(Request::kSetVringAddr, &a, sizeof a)).ok);
    if (kick) {
      Message k = u64(Request::kSetVringKick, index);
      k.fds.push_back(eventfd());
      auto o = send(std::move(k));
      ASSERT_TRUE(o.ok) << o.error;
    }
  }
};

TEST_F(DeviceTest, OffersWhatIsImplementedIncludingSegmentationOffloads) {
  auto o = send(make(Request::kGetFeatures));
  ASSERT_EQ(o.kind, Outcome::Kind::kReply);
  std::uint64_t f;
  std::memcpy(&f, o.reply.data(), 8);
  for (auto want :
       {Feature::kVersion1, Feature::kNetMrgRxbuf, Feature::kRingEventIdx,
        Feature::kRingIndirectDesc, Feature::kVhostUserProtocolFeatures, Feature::kNetCsum,
        Feature::kNetGuestCsum, Feature::kNetHostTso4, Feature::kNetHostTso6, Feature::kNetHostEcn,
        Feature::kNetGuestTso4, Feature::kNetGuestTso6, Feature::kNetGuestEcn})
    EXPECT_TRUE(virtio::has(f, want)) << static_cast<unsigned>(want);
  // UFO would need IP fragmentation; packed rings are not implemented.
  for (auto never :
       {Feature::kNetHostUfo, Feature::kNetGuestUfo, Feature::kRingPacked, Feature::kNetMq})
    EXPECT_FALSE(virtio::has(f, never)) << static_cast<unsigned>(never);
}

// QEMU replays the features it acked when the backend comes back (a daemon
// restart or upgrade) and fails the device if one is no longer offered: the
// offered set only ever grows. What release 0.1.0 offered, with one queue
// pair and with several, must stay offered.
TEST_F(DeviceTest, TheOfferedSetKeepsEverythingAnEarlierReleaseOffered) {
  using virtio::bit;
  const std::uint64_t release_0_1 =
      bit(Feature::kVersion1) | bit(Feature::kNetMrgRxbuf) | bit(Feature::kRingEventIdx) |
      bit(Feature::kRingIndirectDesc) | bit(Feature::kAnyLayout) |
      bit(Feature::kVhostUserProtocolFeatures) | bit(Feature::kNetCsum) |
      bit(Feature::kNetGuestCsum) | bit(Feature::kNetMtu);
  const std::uint64_t protocol_0_1 =
      vhost::bit(ProtocolFeature::kReplyAck) | vhost::bit(ProtocolFeature::kNetMtu) |
      vhost::bit(ProtocolFeature::kResetDevice) | vhost::bit(ProtocolFeature::kStatus);
  for (std::uint32_t pairs : {1u, 4u}) {
    RecordingBackend b;
    Device d(DeviceOptions{pairs}, b);
    const std::uint64_t mq = pairs > 1 ? bit(Feature::kNetMq) : 0;
    const std::uint64_t mq_protocol = pairs > 1 ? vhost::bit(ProtocolFeature::kMq) : 0;
    EXPECT_EQ(d.offered_features() & (release_0_1 | mq), release_0_1 | mq) << pairs;
    EXPECT_EQ(d.offered_protocol_features() & (protocol_0_1 | mq_protocol),
              protocol_0_1 | mq_protocol)
        << pairs;
  }
}

TEST_F(DeviceTest, WithTsoOffTheSegmentationFeaturesAreNotOffered) {
  RecordingBackend b;
  Device plain(DeviceOptions{1, true, false}, b);
  const std::uint64_t f = plain.offered_features();
  EXPECT_TRUE(virtio::has(f, Feature::kNetCsum));
  for (auto never : {Feature::kNetHostTso4, Feature::kNetHostTso6, Feature::kNetHostEcn,
                     Feature::kNetGuestTso4, Feature::kNetGuestTso6, Feature::kNetGuestEcn})
    EXPECT_FALSE(virtio::has(f, never)) << static_cast<unsigned>(never);
}

TEST_F(DeviceTest, MultiQueueIsOfferedOnlyWithSeveralQueuePairs) {
  RecordingBackend b;
  Device mq(DeviceOptions{4, true}, b);
  Message m = make(Request::kGetQueueNum);
  auto o = mq.handle(m);
  std::uint64_t n;
  std::memcpy(&n, o.reply.data(), 8);
  EXPECT_EQ(n, 4u);
  EXPECT_TRUE(virtio::has(mq.offered_features(), Feature::kNetMq));
  EXPECT_TRUE(mq.offered_protocol_features() & bit(ProtocolFeature::kMq));
}

TEST_F(DeviceTest, TheCeilingOfQueuePairsIsOfferedAndEveryVringOfItWorks) {
  RecordingBackend b;
  constexpr std::uint32_t kMax = Device::kMaxQueuePairs;
  Device mq(DeviceOptions{kMax + 5, true}, b);  // more than the ceiling: the ceiling
  Message m = make(Request::kGetQueueNum);
  auto o = mq.handle(m);
  std::uint64_t n;
  std::memcpy(&n, o.reply.data(), 8);
  EXPECT_EQ(n, kMax);
  EXPECT_EQ(mq.vring_count(), 2 * kMax);
  // The last vring vhost-user can name (index 255 in 8 bits) is in range.
  Message last = u64(Request::kSetVringCall, (2 * kMax - 1) | kVringNoFdFlag);
  EXPECT_TRUE(mq.handle(last).ok);
  Message beyond = state(Request::kSetVringNum, 2 * kMax, 256);
  EXPECT_FALSE(mq.handle(beyond).ok);
}

TEST_F(DeviceTest, APortOfFourPairsRefusesTheFifth) {
  RecordingBackend b;
  Device mq(DeviceOptions{4, true}, b);
  Message seven = state(Request::kSetVringEnable, 7, 1);
  EXPECT_TRUE(mq.handle(seven).ok);
  Message eight = state(Request::kSetVringEnable, 8, 1);
  const auto o = mq.handle(eight);
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.error.find("vring 8 out of range"), std::string::npos) << o.error;
}

TEST_F(DeviceTest, RefusesFeaturesThatWereNotOffered) {
  auto o = send(u64(Request::kSetFeatures, virtio::bit(Feature::kRingPacked)));
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(device.acked_features(), 0u);
}

TEST_F(DeviceTest, RingStartsOnlyWhenFullySetUpAndEnabled) {
  // Includes PROTOCOL_FEATURES: rings wait for ENABLE. Not LOG_ALL: QEMU
  // acks it only while it migrates, after SET_LOG_BASE.
  negotiate(device.offered_features() & ~virtio::bit(Feature::kLogAll));
  mem_table();
  ring(1);
  EXPECT_EQ(backend.starts, 0) << "not enabled yet";
  ASSERT_TRUE(send(state(Request::kSetVringEnable, 1, 1)).ok);
  ASSERT_EQ(backend.running.count(1), 1u);
  const auto& s = backend.running[1];
  EXPECT_EQ(s.ring.size, 256u);
  EXPECT_EQ(s.ring.avail_uva, 0x7f0000001000u);
  EXPECT_TRUE(s.ring.event_idx);
  EXPECT_TRUE(s.kick.valid());
  EXPECT_NE(s.memory, nullptr);
}

TEST_F(DeviceTest, WithoutProtocolFeaturesARingIsEnabledOnceKicked) {
  negotiate(virtio::bit(Feature::kVersion1));
  mem_table();
  ring(0);
  EXPECT_EQ(backend.running.count(0), 1u);
}

TEST_F(DeviceTest, GetVringBaseStopsTheRingAndReturnsTheDatapathsIndex) {
  negotiate(virtio::bit(Feature::kVersion1));
  mem_table();
  ring(1);
  backend.next_base = 77;
  auto o = send(state(Request::kGetVringBase, 1, 0));
  ASSERT_EQ(o.kind, Outcome::Kind::kReply);
  VringState s;
  std::memcpy(&s, o.reply.data(), sizeof s);
  EXPECT_EQ(s.index, 1u);
  EXPECT_EQ(s.num, 77u);
  EXPECT_EQ(backend.running.count(1), 0u);
  EXPECT_EQ(backend.last_stop, RingStop::kForGood);
  // Stays stopped until the next kick fd, then resumes from 77.
  ASSERT_TRUE(send(state(Request::kSetVringEnable, 1, 1)).ok);
  EXPECT_EQ(backend.running.count(1), 0u);
  Message k = u64(Request::kSetVringKick, 1);
  k.fds.push_back(eventfd());
  ASSERT_TRUE(send(std::move(k)).ok);
  ASSERT_EQ(backend.running.count(1), 1u);
  EXPECT_EQ(backend.running[1].ring.last_avail_idx, 77);
}

TEST_F(DeviceTest, GetVringBaseOfARingItsStalledThreadDidNotStopLosesTheConnection) {
  negotiate(virtio::bit(Feature::kVersion1));
  mem_table();
  ring(1);
  backend.next_base = std::nullopt;  // the datapath did not answer in time
  auto o = send(state(Request::kGetVringBase, 1, 0));
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(o.disconnect) << "no made-up index for the frontend to resume from";
  EXPECT_NE(o.kind, Outcome::Kind::kReply);
}

TEST_F(DeviceTest, NewCallFdRestartsARunningRing) {
  negotiate(virtio::bit(Feature::kVersion1));
  mem_table();
  ring(0);
  const int starts = backend.starts;
  Message c = u64(Request::kSetVringCall, 0);
  c.fds.push_back(eventfd());
  ASSERT_TRUE(send(std::move(c)).ok);
  EXPECT_EQ(backend.stops, 1);
  EXPECT_EQ(backend.last_stop, RingStop::kRestart) << "the guest's ring goes on";
  EXPECT_EQ(backend.starts, starts + 1);
  EXPECT_TRUE(backend.running[0].call.valid());
}

TEST_F(DeviceTest, NoFdFlagMeansPolledRing) {
  negotiate(virtio::bit(Feature::kVersion1));
  mem_table();
  ring(0, /*kick=*/false);
  ASSERT_TRUE(send(u64(Request::kSetVringKick, 0 | kVringNoFdFlag)).ok);
  ASSERT_EQ(backend.running.count(0), 1u);
  EXPECT_FALSE(backend.running[0].kick.valid());
}

TEST_F(DeviceTest, FdRulesComeFromTheTable) {
  // SET_VRING_KICK without the NOFD flag but without an fd.
  auto o = send(u64(Request::kSetVringKick, 0));
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.error.find("fds"), std::string::npos) << o.error;
  // GET_FEATURES with an fd attached: refused, the fd is closed with the message.
  Message m = make(Request::kGetFeatures);
  m.fds.push_back(eventfd());
  EXPECT_FALSE(send(std::move(m)).ok);
}

TEST_F(DeviceTest, PayloadSizesComeFromTheTable) {
  std::uint32_t four = 1;
  EXPECT_FALSE(send(make(Request::kSetFeatures, &four, 4)).ok);
  VringState s{0, 256};
  EXPECT_FALSE(send(make(Request::kSetVringAddr, &s, sizeof s)).ok);
}

TEST_F(DeviceTest, MemoryTableRegionCountMustMatchFds) {
  struct {
    MemoryTableHeader h;
    MemoryRegionDesc r[2];
  } p{{2, 0}, {{0, 4096, 0, 0}, {4096, 4096, 4096, 0}}};
  Message m = make(Request::kSetMemTable, &p, sizeof p);
  m.fds.push_back(eventfd());
  EXPECT_FALSE(send(std::move(m)).ok);
  EXPECT_FALSE(device.has_memory());
  struct {
    MemoryTableHeader h;
  } none{{0, 0}};
  EXPECT_FALSE(send(make(Request::kSetMemTable, &none, sizeof none)).ok);
  struct {
    MemoryTableHeader h;
  } nine{{9, 0}};
  EXPECT_FALSE(send(make(Request::kSetMemTable, &nine, sizeof nine)).ok);
}

TEST_F(DeviceTest, ARefusedMemoryTableIsReportedUntilOneIsTaken) {
  // Memory the daemon does not map (here not a file at all; a file the
  // frontend could truncate likewise): the port says so until the frontend
  // sends memory it maps, or a new session begins.
  EXPECT_EQ(device.memory_refusal(), "");
  auto refuse = [&] {
    struct {
      MemoryTableHeader h;
      MemoryRegionDesc r;
    } p{{1, 0}, {0, 1 << 20, 0x7f0000000000, 0}};
    Message m = make(Request::kSetMemTable, &p, sizeof p);
    m.fds.push_back(eventfd());
    EXPECT_FALSE(send(std::move(m)).ok);
  };
  refuse();
  EXPECT_NE(device.memory_refusal().find("not a memfd or a file"), std::string::npos)
      << device.memory_refusal();
  EXPECT_FALSE(device.has_memory());
  mem_table();
  EXPECT_EQ(device.memory_refusal(), "");
  refuse();
  EXPECT_FALSE(device.memory_refusal().empty());
  device.disconnect();
  EXPECT_EQ(device.memory_refusal(), "");
}

TEST_F(DeviceTest, VringIndexOutOfRangeIsRefused) {
  EXPECT_FALSE(send(state(Request::kSetVringNum, 2, 256)).ok) << "one queue pair: vrings 0 and 1";
  EXPECT_FALSE(send(state(Request::kSetVringEnable, 200, 1)).ok);
  EXPECT_FALSE(send(u64(Request::kSetVringCall, 5 | kVringNoFdFlag)).ok);
  EXPECT_FALSE(send(u64(Request::kSetVringCall, 0x10000)).ok) << "unknown bits";
}

TEST_F(DeviceTest, RingSizeMustBeAPowerOfTwo) {
  EXPECT_FALSE(send(state(Request::kSetVringNum, 0, 100)).ok);
  EXPECT_FALSE(send(state(Request::kSetVringNum, 0, 0)).ok);
  EXPECT_FALSE(send(state(Request::kSetVringNum, 0, 65536)).ok);
  EXPECT_TRUE(send(state(Request::kSetVringNum, 0, 32768)).ok);
}

TEST_F(DeviceTest, UnknownAndUnsupportedRequestsFailWithoutSideEffects) {
  auto o = send(make(static_cast<Request>(999)));
  EXPECT_FALSE(o.ok);
  EXPECT_FALSE(o.disconnect);
  EXPECT_EQ(o.kind, Outcome::Kind::kAck);
  EXPECT_EQ(request_name(999), "UNKNOWN(999)");
  EXPECT_FALSE(send(make(Request::kSetLogBase)).ok);
  EXPECT_FALSE(send(make(Request::kSendRarp)).ok);
}

TEST_F(DeviceTest, RefusedRequestsWithAReplyOfTheirOwnAreStillAnswered) {
  // QEMU waits for GET_VRING_BASE's reply without asking for an ack.
  auto o = send(state(Request::kGetVringBase, 9, 0));
  EXPECT_FALSE(o.ok);
  ASSERT_EQ(o.kind, Outcome::Kind::kReply);
  EXPECT_EQ(o.reply, std::vector<std::uint8_t>(8, 0));
  std::uint32_t short_payload = 0;
  o = send(make(Request::kGetVringBase, &short_payload, 4));
  ASSERT_EQ(o.kind, Outcome::Kind::kReply);
  EXPECT_EQ(o.reply.size(), 8u);
  o = send(make(Request::kGetMaxMemSlots));
  ASSERT_EQ(o.kind, Outcome::Kind::kReply) << "not offered, but the frontend would block";
}

TEST_F(DeviceTest, SetVringErrOnARunningRingHandsTheNewFdOver) {
  negotiate(virtio::bit(Feature::kVersion1));
  mem_table();
  ring(1);
  Message e = u64(Request::kSetVringErr, 1);
  e.fds.push_back(eventfd());
  const int starts = backend.starts;
  ASSERT_TRUE(send(std::move(e)).ok);
  EXPECT_EQ(backend.starts, starts + 1);
  EXPECT_TRUE(backend.running[1].err.valid());
}

TEST_F(DeviceTest, ReplyAckFollowsTheNegotiatedProtocolFeatures) {
  EXPECT_FALSE(device.reply_ack_negotiated());
  ASSERT_TRUE(send(u64(Request::kSetProtocolFeatures, bit(ProtocolFeature::kReplyAck))).ok);
  EXPECT_TRUE(device.reply_ack_negotiated());
  EXPECT_FALSE(send(u64(Request::kSetProtocolFeatures, bit(ProtocolFeature::kBackendReq))).ok)
      << "not offered";
}

TEST_F(DeviceTest, DisconnectStopsEveryRingAndForgetsTheSession) {
  negotiate(virtio::bit(Feature::kVersion1));
  mem_table();
  ring(0);
  ring(1);
  ASSERT_EQ(backend.running.size(), 2u);
  device.disconnect();
  EXPECT_TRUE(backend.running.empty());
  EXPECT_EQ(backend.last_stop, RingStop::kForGood);
  EXPECT_EQ(device.acked_features(), 0u);
  EXPECT_FALSE(device.has_memory());
  EXPECT_EQ(device.vrings()[0].num, 0u);
}

TEST_F(DeviceTest, ResetDeviceKeepsProtocolFeatures) {
  ASSERT_TRUE(send(u64(Request::kSetProtocolFeatures, device.offered_protocol_features())).ok);
  negotiate(virtio::bit(Feature::kVersion1));
  mem_table();
  ring(0);
  ASSERT_TRUE(send(make(Request::kResetDevice)).ok);
  EXPECT_TRUE(backend.running.empty());
  EXPECT_EQ(device.acked_protocol_features(), device.offered_protocol_features());
  EXPECT_EQ(device.acked_features(), 0u);
}

TEST_F(DeviceTest, NewMemoryTableHandsRunningRingsOverAgain) {
  negotiate(virtio::bit(Feature::kVersion1));
  mem_table();
  ring(0);
  auto old_memory = backend.running[0].memory;
  ::close(memfd);
  memfd = -1;
  mem_table();
  ASSERT_EQ(backend.running.count(0), 1u);
  EXPECT_NE(backend.running[0].memory, old_memory);
}

TEST_F(DeviceTest, MtuIsPassedToTheDatapath) {
  EXPECT_FALSE(send(u64(Request::kNetSetMtu, 9000)).ok) << "NET_MTU not negotiated";
  EXPECT_EQ(backend.mtu, 0u);
  ASSERT_TRUE(send(u64(Request::kSetProtocolFeatures, bit(ProtocolFeature::kNetMtu))).ok);
  ASSERT_TRUE(send(u64(Request::kNetSetMtu, 9000)).ok);
  EXPECT_EQ(backend.mtu, 9000u);
  EXPECT_FALSE(send(u64(Request::kNetSetMtu, 10)).ok);
}

TEST_F(DeviceTest, StatusRoundTrips) {
  ASSERT_TRUE(send(u64(Request::kSetStatus, kStatusDriverOk | kStatusFeaturesOk)).ok);
  auto o = send(make(Request::kGetStatus));
  std::uint64_t v;
  std::memcpy(&v, o.reply.data(), 8);
  EXPECT_EQ(v, std::uint64_t{kStatusDriverOk | kStatusFeaturesOk});
}

// ---- live migration ------------------------------------------------------

struct LogFile {
  int fd;
  explicit LogFile(unsigned flags = MFD_ALLOW_SEALING | MFD_CLOEXEC)
      : fd(::memfd_create("log", flags)) {
    if (fd >= 0 && ::ftruncate(fd, 4096) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ~LogFile() {
    if (fd >= 0) ::close(fd);
  }
  Message set_log_base(std::uint64_t size = 4096, std::uint64_t offset = 0) const {
    LogDescription d{size, offset};
    Message m = make(Request::kSetLogBase, &d, sizeof d);
    m.fds.emplace_back(::dup(fd));
    return m;
  }
};

constexpr std::uint64_t kLogAll = virtio::bit(Feature::kLogAll);

TEST_F(DeviceTest, OffersLiveMigration) {
  const std::uint64_t f = device.offered_features();
  EXPECT_TRUE(virtio::has(f, Feature::kLogAll));
  EXPECT_TRUE(virtio::has(f, Feature::kNetGuestAnnounce));
  const std::uint64_t p = device.offered_protocol_features();
  EXPECT_TRUE(p & bit(ProtocolFeature::kLogShmfd));
  EXPECT_TRUE(p & bit(ProtocolFeature::kRarp));
  // What was offered is accepted back, LOG_ALL included.
  negotiate(f);
  ASSERT_TRUE(send(u64(Request::kSetProtocolFeatures, p)).ok);
}

TEST_F(DeviceTest, SetLogBaseMapsTheLogAndRepliesWithAnEmptyPayload) {
  log_shmfd();
  LogFile log;
  ASSERT_GE(log.fd, 0);
  auto o = send(log.set_log_base(4096, 0));
  ASSERT_TRUE(o.ok) << o.error;
  ASSERT_EQ(o.kind, Outcome::Kind::kReply);
  EXPECT_TRUE(o.reply.empty());
  ASSERT_NE(device.log(), nullptr);
  EXPECT_EQ(device.log()->size(), 4096u);
  EXPECT_FALSE(device.logging()) << "LOG_ALL not acked yet";
}

TEST_F(DeviceTest, RefusedSetLogBaseIsStillAnsweredEmpty) {
  log_shmfd();
  LogDescription d{4096, 0};
  auto o = send(make(Request::kSetLogBase, &d, sizeof d));  // no fd
  EXPECT_FALSE(o.ok);
  ASSERT_EQ(o.kind, Outcome::Kind::kReply);
  EXPECT_TRUE(o.reply.empty());
  LogFile log;
  o = send(log.set_log_base(8192, 0));  // larger than the file
  EXPECT_FALSE(o.ok);
  ASSERT_EQ(o.kind, Outcome::Kind::kReply);
  EXPECT_TRUE(o.reply.empty());
  EXPECT_EQ(device.log(), nullptr);
}

TEST_F(DeviceTest, SetLogBaseWithoutLogShmfdIsRefusedAndNotAnswered) {
  // A frontend without LOG_SHMFD reads no reply to SET_LOG_BASE: one sent
  // anyway would be taken as the answer to its next request.
  LogFile log;
  ASSERT_GE(log.fd, 0);
  auto o = send(log.set_log_base());
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.error.find("LOG_SHMFD"), std::string::npos) << o.error;
  EXPECT_EQ(o.kind, Outcome::Kind::kAck);
  EXPECT_EQ(device.log(), nullptr);
  LogDescription d{4096, 0};
  o = send(make(Request::kSetLogBase, &d, sizeof d));  // as QEMU sends it then: no fd
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.kind, Outcome::Kind::kAck);
}

TEST_F(DeviceTest, LogAllHandsTheLogToRunningRingsAndTheLogFlagTheUsedRingAddress) {
  log_shmfd();
  negotiate(virtio::bit(Feature::kVersion1));
  mem_table();
  ring(0);
  ASSERT_EQ(backend.running.count(0), 1u);
  EXPECT_EQ(backend.running[0].ring.log, nullptr);
  LogFile log;
  ASSERT_TRUE(send(log.set_log_base()).ok);
  EXPECT_EQ(backend.running[0].ring.log, nullptr) << "no logging before LOG_ALL";
  negotiate(virtio::bit(Feature::kVersion1) | kLogAll);
  EXPECT_TRUE(device.logging());
  ASSERT_EQ(backend.running.count(0), 1u);
  EXPECT_EQ(backend.running[0].ring.log, device.log());
  EXPECT_FALSE(backend.running[0].ring.log_used);
  // SET_VRING_ADDR with VHOST_VRING_F_LOG: the used ring is logged at its GPA.
  VringAddress a{0, VringAddress::kFlagLog, 0x7f0000000000, 0x7f0000002000, 0x7f0000001000, 0x2000};
  ASSERT_TRUE(send(make(Request::kSetVringAddr, &a, sizeof a)).ok);
  ASSERT_EQ(backend.running.count(0), 1u);
  EXPECT_TRUE(backend.running[0].ring.log_used);
  EXPECT_EQ(backend.running[0].ring.used_log_gpa, 0x2000u);
  // Logging off (migration done or cancelled): the rings run without the log.
  negotiate(virtio::bit(Feature::kVersion1));
  EXPECT_FALSE(device.logging());
  EXPECT_EQ(device.log(), nullptr);
  ASSERT_EQ(backend.running.count(0), 1u);
  EXPECT_EQ(backend.running[0].ring.log, nullptr);
}

TEST_F(DeviceTest, WithLogAllButNoUsableLogRingsStayStopped) {
  log_shmfd();
  negotiate(virtio::bit(Feature::kVersion1));
  mem_table();
  ring(0);
  negotiate(virtio::bit(Feature::kVersion1) | kLogAll);
  EXPECT_EQ(backend.running.count(0), 0u) << "a write now would go unlogged";
  LogFile unsealable(MFD_CLOEXEC);  // cannot be sealed against shrinking
  ASSERT_GE(unsealable.fd, 0);
  EXPECT_FALSE(send(unsealable.set_log_base()).ok);
  EXPECT_EQ(backend.running.count(0), 0u);
  LogFile log;
  ASSERT_TRUE(send(log.set_log_base()).ok);
  ASSERT_EQ(backend.running.count(0), 1u);
  EXPECT_EQ(backend.running[0].ring.log, device.log());
}

TEST_F(DeviceTest, ANewLogWhileLoggingReplacesTheOldOneOnRunningRings) {
  log_shmfd();
  negotiate(virtio::bit(Feature::kVersion1));
  mem_table();
  ring(1);
  LogFile first, second;
  ASSERT_TRUE(send(first.set_log_base()).ok);
  negotiate(virtio::bit(Feature::kVersion1) | kLogAll);
  const auto old = device.log();
  ASSERT_TRUE(send(second.set_log_base(2048, 1024)).ok);
  EXPECT_NE(device.log(), old);
  EXPECT_EQ(backend.running[1].ring.log, device.log());
  EXPECT_EQ(device.log()->size(), 2048u);
}

TEST_F(DeviceTest, UnknownVringAddressFlagsAreRefused) {
  VringAddress a{0, 2, 0x7f0000000000, 0x7f0000002000, 0x7f0000001000, 0};
  EXPECT_FALSE(send(make(Request::kSetVringAddr, &a, sizeof a)).ok);
}

TEST_F(DeviceTest, SendRarpAnnouncesTheGuestsMac) {
  const std::uint8_t mac[8] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56, 0, 0};
  EXPECT_FALSE(send(make(Request::kSendRarp, mac, 8)).ok) << "RARP not negotiated";
  EXPECT_TRUE(backend.announced.empty());
  ASSERT_TRUE(send(u64(Request::kSetProtocolFeatures, bit(ProtocolFeature::kRarp))).ok);
  auto o = send(make(Request::kSendRarp, mac, 8));
  ASSERT_TRUE(o.ok) << o.error;
  ASSERT_EQ(backend.announced.size(), 1u);
  EXPECT_EQ(backend.announced[0],
            (std::array<std::uint8_t, 6>{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}));
  EXPECT_EQ(device.rarps_sent(), 1u);
  const std::uint8_t group[8] = {0x01, 0x00, 0x5e, 0, 0, 1, 0, 0};
  EXPECT_FALSE(send(make(Request::kSendRarp, group, 8)).ok);
  EXPECT_FALSE(send(make(Request::kSendRarp, mac, 6)).ok) << "payload is a u64";
  EXPECT_EQ(backend.announced.size(), 1u);
}

}  // namespace
}  // namespace xdpvhost::vhost

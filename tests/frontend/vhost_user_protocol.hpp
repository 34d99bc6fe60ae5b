#pragma once
// Deliberately not folded into lib/vhost/protocol.hpp: a wrong constant there must fail tests.
// vhost-user wire format as the frontend (driver side) sees it, written from
// QEMU docs/interop/vhost-user.rst. Independent of lib/vhost on purpose: the
// test frontend must not share the backend's reading of the specification
// (were it to include the backend's header, a wrong request code or feature
// bit would agree with itself and every test would still pass).

#include <cstdint>

namespace xdpvhost::testing::vhost_user {

// Front-end message types ("request" field).
enum class Request : std::uint32_t {
  kGetFeatures = 1,
  kSetFeatures = 2,
  kSetOwner = 3,
  kResetOwner = 4,
  kSetMemTable = 5,
  kSetLogBase = 6,
  kSetLogFd = 7,
  kSetVringNum = 8,
  kSetVringAddr = 9,
  kSetVringBase = 10,
  kGetVringBase = 11,
  kSetVringKick = 12,
  kSetVringCall = 13,
  kSetVringErr = 14,
  kGetProtocolFeatures = 15,
  kSetProtocolFeatures = 16,
  kGetQueueNum = 17,
  kSetVringEnable = 18,
  kSendRarp = 19,
  kNetSetMtu = 20,
  kSetBackendReqFd = 21,  // SET_SLAVE_REQ_FD
  kIotlbMsg = 22,
  kSetVringEndian = 23,
  kGetConfig = 24,
  kSetConfig = 25,
  kCreateCryptoSession = 26,
  kCloseCryptoSession = 27,
  kPostcopyAdvise = 28,
  kPostcopyListen = 29,
  kPostcopyEnd = 30,
  kGetInflightFd = 31,
  kSetInflightFd = 32,
  kGpuSetSocket = 33,
  kResetDevice = 34,
  kVringKick = 35,
  kGetMaxMemSlots = 36,
  kAddMemReg = 37,
  kRemMemReg = 38,
  kSetStatus = 39,
  kGetStatus = 40,
};

constexpr std::uint32_t to_u32(Request r) {
  return static_cast<std::uint32_t>(r);
}

// Printable name ("SET_MEM_TABLE"); "UNKNOWN" for other numbers.
const char* request_name(std::uint32_t request);

// Header "flags" field.
constexpr std::uint32_t kVersion = 0x1;
constexpr std::uint32_t kVersionMask = 0x3;
constexpr std::uint32_t kFlagReply = 1u << 2;
constexpr std::uint32_t kFlagNeedReply = 1u << 3;

// Protocol feature bits (GET/SET_PROTOCOL_FEATURES).
enum class ProtocolFeature : unsigned {
  kMq = 0,
  kLogShmfd = 1,
  kRarp = 2,
  kReplyAck = 3,
  kNetMtu = 4,
  kBackendReq = 5,  // SLAVE_REQ
  kCrossEndian = 6,
  kCryptoSession = 7,
  kPagefault = 8,
  kConfig = 9,
  kBackendSendFd = 10,  // SLAVE_SEND_FD
  kHostNotifier = 11,
  kInflightShmfd = 12,
  kResetDevice = 13,
  kInbandNotifications = 14,
  kConfigureMemSlots = 15,
  kStatus = 16,
};

constexpr std::uint64_t bit(ProtocolFeature f) {
  return std::uint64_t{1} << static_cast<unsigned>(f);
}
constexpr bool has(std::uint64_t protocol_features, ProtocolFeature f) {
  return (protocol_features & bit(f)) != 0;
}

// Virtio device status bits (SET_STATUS / GET_STATUS).
constexpr std::uint8_t kStatusAcknowledge = 1;
constexpr std::uint8_t kStatusDriver = 2;
constexpr std::uint8_t kStatusDriverOk = 4;
constexpr std::uint8_t kStatusFeaturesOk = 8;
constexpr std::uint8_t kStatusNeedsReset = 64;
constexpr std::uint8_t kStatusFailed = 128;

// u64 payload of SET_VRING_KICK/CALL/ERR.
constexpr std::uint64_t kVringIndexMask = 0xff;
constexpr std::uint64_t kVringInvalidFd = 1u << 8;

constexpr unsigned kMaxMemRegions = 8;  // SET_MEM_TABLE limit
constexpr unsigned kMaxFds = 8;         // fds one message may carry

struct Header {
  std::uint32_t request;
  std::uint32_t flags;
  std::uint32_t size;
};
static_assert(sizeof(Header) == 12);

struct VringState {
  std::uint32_t index;
  std::uint32_t num;
};
static_assert(sizeof(VringState) == 8);

struct VringAddr {
  static constexpr std::uint32_t kFlagLog = 1;
  std::uint32_t index;
  std::uint32_t flags;
  std::uint64_t desc_user_addr;
  std::uint64_t used_user_addr;
  std::uint64_t avail_user_addr;
  std::uint64_t log_guest_addr;
};
static_assert(sizeof(VringAddr) == 40);

struct MemoryRegion {
  std::uint64_t guest_phys_addr;
  std::uint64_t memory_size;
  std::uint64_t userspace_addr;
  std::uint64_t mmap_offset;
};
static_assert(sizeof(MemoryRegion) == 32);

// SET_MEM_TABLE payload: u32 nregions, u32 padding, then nregions regions
// (QEMU sends only the regions in use, so size = 8 + 32 * nregions).
struct MemoryTableHead {
  std::uint32_t nregions;
  std::uint32_t padding;
};
static_assert(sizeof(MemoryTableHead) == 8);

// ADD_MEM_REG / REM_MEM_REG payload.
struct SingleMemoryRegion {
  std::uint64_t padding;
  MemoryRegion region;
};
static_assert(sizeof(SingleMemoryRegion) == 40);

struct LogDescription {
  std::uint64_t mmap_size;
  std::uint64_t mmap_offset;
};

struct IotlbMessage {
  std::uint64_t iova;
  std::uint64_t size;
  std::uint64_t uaddr;
  std::uint8_t perm;
  std::uint8_t type;
  std::uint8_t padding[6];
};
static_assert(sizeof(IotlbMessage) == 32);

struct ConfigHead {
  std::uint32_t offset;
  std::uint32_t size;
  std::uint32_t flags;
};

struct InflightDescription {
  std::uint64_t mmap_size;
  std::uint64_t mmap_offset;
  std::uint16_t num_queues;
  std::uint16_t queue_size;
  std::uint8_t padding[4];
};
static_assert(sizeof(InflightDescription) == 24);

}  // namespace xdpvhost::testing::vhost_user

#pragma once
// The vhost-user wire format (QEMU docs/interop/vhost-user.rst): message
// header, request codes, protocol feature bits and payload layouts.

#include <cstdint>

namespace xdpvhost::vhost {

enum class Request : std::uint32_t {
  kNone = 0,
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
  kSetBackendReqFd = 21,
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

enum class ProtocolFeature : unsigned {
  kMq = 0,
  kLogShmfd = 1,
  kRarp = 2,
  kReplyAck = 3,
  kNetMtu = 4,
  kBackendReq = 5,
  kCrossEndian = 6,
  kCryptoSession = 7,
  kPagefault = 8,
  kConfig = 9,
  kBackendSendFd = 10,
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

struct MessageHeader {
  static constexpr std::uint32_t kVersionMask = 0x3;
  static constexpr std::uint32_t kVersion = 0x1;
  static constexpr std::uint32_t kFlagReply = 1u << 2;
  static constexpr std::uint32_t kFlagNeedReply = 1u << 3;

  std::uint32_t request;
  std::uint32_t flags;
  std::uint32_t size;  // payload bytes that follow
};
static_assert(sizeof(MessageHeader) == 12);

// Payloads.
struct VringState {
  std::uint32_t index;
  std::uint32_t num;
};

struct VringAddress {
  static constexpr std::uint32_t kFlagLog = 1;
  std::uint32_t index;
  std::uint32_t flags;
  std::uint64_t desc_user_addr;
  std::uint64_t used_user_addr;
  std::uint64_t avail_user_addr;
  std::uint64_t log_guest_addr;
};
static_assert(sizeof(VringAddress) == 40);

// SET_LOG_BASE with LOG_SHMFD ("Log description").
struct LogDescription {
  std::uint64_t mmap_size;
  std::uint64_t mmap_offset;
};
static_assert(sizeof(LogDescription) == 16);

struct MemoryRegionDesc {
  std::uint64_t guest_phys_addr;
  std::uint64_t memory_size;
  std::uint64_t user_addr;
  std::uint64_t mmap_offset;
};
static_assert(sizeof(MemoryRegionDesc) == 32);

constexpr std::uint32_t kMaxMemoryRegions = 8;  // VHOST_MEMORY_BASELINE_NREGIONS

struct MemoryTableHeader {
  std::uint32_t nregions;
  std::uint32_t padding;
};

// SET_VRING_KICK/CALL/ERR: low byte is the vring index, bit 8 says "no fd".
constexpr std::uint64_t kVringIndexMask = 0xff;
constexpr std::uint64_t kVringNoFdFlag = 0x100;

// SET_STATUS values (virtio device status byte).
constexpr std::uint8_t kStatusAcknowledge = 1;
constexpr std::uint8_t kStatusDriver = 2;
constexpr std::uint8_t kStatusDriverOk = 4;
constexpr std::uint8_t kStatusFeaturesOk = 8;
constexpr std::uint8_t kStatusFailed = 128;

constexpr std::uint32_t kMaxPayloadSize = 4096 + 64;  // larger than any message we accept
constexpr int kMaxFdsPerMessage = 8;

}  // namespace xdpvhost::vhost

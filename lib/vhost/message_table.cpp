#include "vhost/message_table.hpp"

#include <array>

#include "sys/fd_kind.hpp"

namespace xdpvhost::vhost {
namespace {

using R = Request;
using P = PayloadRule;
using F = FdRule;
using D = Device;

constexpr std::array kTable = {
    MessageSpec{R::kGetFeatures, "GET_FEATURES", P::kAny, F::kNone, &D::on_get_features, 8},
    MessageSpec{R::kSetFeatures, "SET_FEATURES", P::kU64, F::kNone, &D::on_set_features},
    MessageSpec{R::kSetOwner, "SET_OWNER", P::kAny, F::kNone, &D::on_set_owner},
    MessageSpec{R::kResetOwner, "RESET_OWNER", P::kAny, F::kNone, &D::on_reset_owner},
    MessageSpec{R::kSetMemTable, "SET_MEM_TABLE", P::kMemoryTable, F::kOnePerRegion,
                &D::on_set_mem_table},
    // Answered with an empty reply, refused or not, once LOG_SHMFD is
    // negotiated: the frontend then waits for it.
    MessageSpec{R::kSetLogBase, "SET_LOG_BASE", P::kLog, F::kOne, &D::on_set_log_base, kReplyEmpty},
    MessageSpec{R::kSetLogFd, "SET_LOG_FD", P::kAny, F::kOne, &D::on_set_log_fd},
    MessageSpec{R::kSetVringNum, "SET_VRING_NUM", P::kVringState, F::kNone, &D::on_set_vring_num},
    MessageSpec{R::kSetVringAddr, "SET_VRING_ADDR", P::kVringAddress, F::kNone,
                &D::on_set_vring_addr},
    MessageSpec{R::kSetVringBase, "SET_VRING_BASE", P::kVringState, F::kNone,
                &D::on_set_vring_base},
    MessageSpec{R::kGetVringBase, "GET_VRING_BASE", P::kVringState, F::kNone, &D::on_get_vring_base,
                8},
    MessageSpec{R::kSetVringKick, "SET_VRING_KICK", P::kU64, F::kOneUnlessNoFd,
                &D::on_set_vring_kick},
    MessageSpec{R::kSetVringCall, "SET_VRING_CALL", P::kU64, F::kOneUnlessNoFd,
                &D::on_set_vring_call},
    MessageSpec{R::kSetVringErr, "SET_VRING_ERR", P::kU64, F::kOneUnlessNoFd, &D::on_set_vring_err},
    MessageSpec{R::kGetProtocolFeatures, "GET_PROTOCOL_FEATURES", P::kAny, F::kNone,
                &D::on_get_protocol_features, 8},
    MessageSpec{R::kSetProtocolFeatures, "SET_PROTOCOL_FEATURES", P::kU64, F::kNone,
                &D::on_set_protocol_features},
    MessageSpec{R::kGetQueueNum, "GET_QUEUE_NUM", P::kAny, F::kNone, &D::on_get_queue_num, 8},
    MessageSpec{R::kSetVringEnable, "SET_VRING_ENABLE", P::kVringState, F::kNone,
                &D::on_set_vring_enable},
    MessageSpec{R::kSendRarp, "SEND_RARP", P::kU64, F::kNone, &D::on_send_rarp},
    MessageSpec{R::kNetSetMtu, "NET_SET_MTU", P::kU64, F::kNone, &D::on_net_set_mtu},
    MessageSpec{R::kSetBackendReqFd, "SET_BACKEND_REQ_FD", P::kAny, F::kOne,
                &D::on_set_backend_req_fd},
    MessageSpec{R::kIotlbMsg, "IOTLB_MSG", P::kAny, F::kNone, &D::on_unsupported},
    MessageSpec{R::kSetVringEndian, "SET_VRING_ENDIAN", P::kAny, F::kNone, &D::on_unsupported},
    MessageSpec{R::kGetConfig, "GET_CONFIG", P::kAny, F::kNone, &D::on_unsupported,
                kReplySameSizeAsRequest},
    MessageSpec{R::kSetConfig, "SET_CONFIG", P::kAny, F::kNone, &D::on_unsupported},
    MessageSpec{R::kPostcopyAdvise, "POSTCOPY_ADVISE", P::kAny, F::kNone, &D::on_unsupported},
    MessageSpec{R::kPostcopyListen, "POSTCOPY_LISTEN", P::kAny, F::kNone, &D::on_unsupported},
    MessageSpec{R::kPostcopyEnd, "POSTCOPY_END", P::kAny, F::kNone, &D::on_unsupported},
    MessageSpec{R::kGetInflightFd, "GET_INFLIGHT_FD", P::kAny, F::kNone, &D::on_unsupported,
                kReplySameSizeAsRequest},
    MessageSpec{R::kSetInflightFd, "SET_INFLIGHT_FD", P::kAny, F::kNone, &D::on_unsupported},
    MessageSpec{R::kResetDevice, "RESET_DEVICE", P::kAny, F::kNone, &D::on_reset_device},
    MessageSpec{R::kVringKick, "VRING_KICK", P::kAny, F::kNone, &D::on_unsupported},
    MessageSpec{R::kGetMaxMemSlots, "GET_MAX_MEM_SLOTS", P::kAny, F::kNone, &D::on_unsupported, 8},
    MessageSpec{R::kAddMemReg, "ADD_MEM_REG", P::kAny, F::kNone, &D::on_unsupported},
    MessageSpec{R::kRemMemReg, "REM_MEM_REG", P::kAny, F::kNone, &D::on_unsupported},
    MessageSpec{R::kSetStatus, "SET_STATUS", P::kU64, F::kNone, &D::on_set_status},
    MessageSpec{R::kGetStatus, "GET_STATUS", P::kAny, F::kNone, &D::on_get_status, 8},
};

std::size_t expected_fds(const MessageSpec& spec, const Message& m) {
  switch (spec.fds) {
    case F::kNone:
      return 0;
    case F::kOne:
      return 1;
    case F::kOneUnlessNoFd:
      return (m.u64() & kVringNoFdFlag) ? 0 : 1;
    case F::kOnePerRegion:
      return m.as<MemoryTableHeader>().nregions;
  }
  return 0;
}

}  // namespace

const MessageSpec* find_message_spec(std::uint32_t request) noexcept {
  for (const auto& spec : kTable)
    if (static_cast<std::uint32_t>(spec.request) == request) return &spec;
  return nullptr;
}

std::string request_name(std::uint32_t request) {
  if (const auto* spec = find_message_spec(request)) return spec->name;
  return "UNKNOWN(" + std::to_string(request) + ")";
}

std::string check_message(const MessageSpec& spec, const Message& m) {
  const std::uint32_t size = m.header.size;
  auto wrong_size = [&](std::size_t want) {
    return std::string(spec.name) + ": payload is " + std::to_string(size) + " bytes, expected " +
           std::to_string(want);
  };
  switch (spec.payload) {
    case P::kAny:
      break;
    case P::kU64:
      if (size != sizeof(std::uint64_t)) return wrong_size(sizeof(std::uint64_t));
      break;
    case P::kVringState:
      if (size != sizeof(VringState)) return wrong_size(sizeof(VringState));
      break;
    case P::kVringAddress:
      if (size != sizeof(VringAddress)) return wrong_size(sizeof(VringAddress));
      break;
    case P::kMemoryTable: {
      if (size < sizeof(MemoryTableHeader)) return wrong_size(sizeof(MemoryTableHeader));
      const auto n = m.as<MemoryTableHeader>().nregions;
      if (n == 0 || n > kMaxMemoryRegions)
        return std::string(spec.name) + ": " + std::to_string(n) + " regions, expected 1.." +
               std::to_string(kMaxMemoryRegions);
      const std::size_t want = sizeof(MemoryTableHeader) + n * sizeof(MemoryRegionDesc);
      if (size != want) return wrong_size(want);
      break;
    }
    case P::kLog:
      if (size != sizeof(LogDescription)) return wrong_size(sizeof(LogDescription));
      break;
  }
  const std::size_t want_fds = expected_fds(spec, m);
  if (m.fds.size() != want_fds)
    return std::string(spec.name) + ": came with " + std::to_string(m.fds.size()) +
           " fds, expected " + std::to_string(want_fds);
  // A kick, call or err fd is read and written by a service thread: anything
  // but an eventfd (a pipe, a socket, a FIFO) could block it, and every port
  // it serves with it. Non-blocking, a peer that fills the counter costs
  // it one failed write.
  if (spec.fds == F::kOneUnlessNoFd && want_fds == 1) {
    if (!sys::is_eventfd(m.fds[0].get()))
      return std::string(spec.name) + ": the fd is not an eventfd";
    if (!sys::set_nonblocking(m.fds[0].get()))
      return std::string(spec.name) + ": cannot make the eventfd non-blocking";
  }
  return {};
}

}  // namespace xdpvhost::vhost

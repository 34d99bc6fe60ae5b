#include "frontend/vhost_user_protocol.hpp"

namespace xdpvhost::testing::vhost_user {

const char* request_name(std::uint32_t request) {
  switch (static_cast<Request>(request)) {
    case Request::kGetFeatures:
      return "GET_FEATURES";
    case Request::kSetFeatures:
      return "SET_FEATURES";
    case Request::kSetOwner:
      return "SET_OWNER";
    case Request::kResetOwner:
      return "RESET_OWNER";
    case Request::kSetMemTable:
      return "SET_MEM_TABLE";
    case Request::kSetLogBase:
      return "SET_LOG_BASE";
    case Request::kSetLogFd:
      return "SET_LOG_FD";
    case Request::kSetVringNum:
      return "SET_VRING_NUM";
    case Request::kSetVringAddr:
      return "SET_VRING_ADDR";
    case Request::kSetVringBase:
      return "SET_VRING_BASE";
    case Request::kGetVringBase:
      return "GET_VRING_BASE";
    case Request::kSetVringKick:
      return "SET_VRING_KICK";
    case Request::kSetVringCall:
      return "SET_VRING_CALL";
    case Request::kSetVringErr:
      return "SET_VRING_ERR";
    case Request::kGetProtocolFeatures:
      return "GET_PROTOCOL_FEATURES";
    case Request::kSetProtocolFeatures:
      return "SET_PROTOCOL_FEATURES";
    case Request::kGetQueueNum:
      return "GET_QUEUE_NUM";
    case Request::kSetVringEnable:
      return "SET_VRING_ENABLE";
    case Request::kSendRarp:
      return "SEND_RARP";
    case Request::kNetSetMtu:
      return "NET_SET_MTU";
    case Request::kSetBackendReqFd:
      return "SET_SLAVE_REQ_FD";
    case Request::kIotlbMsg:
      return "IOTLB_MSG";
    case Request::kSetVringEndian:
      return "SET_VRING_ENDIAN";
    case Request::kGetConfig:
      return "GET_CONFIG";
    case Request::kSetConfig:
      return "SET_CONFIG";
    case Request::kCreateCryptoSession:
      return "CREATE_CRYPTO_SESSION";
    case Request::kCloseCryptoSession:
      return "CLOSE_CRYPTO_SESSION";
    case Request::kPostcopyAdvise:
      return "POSTCOPY_ADVISE";
    case Request::kPostcopyListen:
      return "POSTCOPY_LISTEN";
    case Request::kPostcopyEnd:
      return "POSTCOPY_END";
    case Request::kGetInflightFd:
      return "GET_INFLIGHT_FD";
    case Request::kSetInflightFd:
      return "SET_INFLIGHT_FD";
    case Request::kGpuSetSocket:
      return "GPU_SET_SOCKET";
    case Request::kResetDevice:
      return "RESET_DEVICE";
    case Request::kVringKick:
      return "VRING_KICK";
    case Request::kGetMaxMemSlots:
      return "GET_MAX_MEM_SLOTS";
    case Request::kAddMemReg:
      return "ADD_MEM_REG";
    case Request::kRemMemReg:
      return "REM_MEM_REG";
    case Request::kSetStatus:
      return "SET_STATUS";
    case Request::kGetStatus:
      return "GET_STATUS";
  }
  return "UNKNOWN";
}

}  // namespace xdpvhost::testing::vhost_user

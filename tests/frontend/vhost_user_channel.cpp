#include "frontend/vhost_user_channel.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace xdpvhost::testing {
namespace {

using vhost_user::Request;
using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kMaxPayload = 64 * 1024;

template <class T>
std::span<const std::uint8_t> bytes_of(const T& value) {
  return {reinterpret_cast<const std::uint8_t*>(&value), sizeof(T)};
}

template <class T>
std::optional<T> payload_as(const std::vector<std::uint8_t>& payload) {
  if (payload.size() < sizeof(T)) return std::nullopt;
  T value;
  std::memcpy(&value, payload.data(), sizeof(T));
  return value;
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

// Waits until the socket is readable. false on timeout or error.
bool wait_readable(int fd, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, remaining_ms(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

// Reads exactly `len` bytes; collects SCM_RIGHTS fds. 0 = ok, -1 = error or
// closed, -2 = timeout.
int read_exact(int fd, std::uint8_t* out, std::size_t len, Clock::time_point deadline,
               std::vector<sys::UniqueFd>* fds) {
  std::size_t got = 0;
  while (got < len) {
    if (!wait_readable(fd, deadline)) return -2;
    iovec iov{out + got, len - got};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 16)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return -1;
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int received;
        std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        if (fds != nullptr) {
          fds->emplace_back(received);
        } else {
          ::close(received);
        }
      }
    }
    if (n == 0) return -1;
    got += static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

std::optional<std::uint64_t> VhostUserMessage::u64() const noexcept {
  return payload_as<std::uint64_t>(payload);
}
std::optional<vhost_user::VringState> VhostUserMessage::vring_state() const noexcept {
  return payload_as<vhost_user::VringState>(payload);
}
std::optional<std::uint64_t> SentRequest::u64() const noexcept {
  return payload_as<std::uint64_t>(payload);
}
std::optional<vhost_user::VringState> SentRequest::vring_state() const noexcept {
  return payload_as<vhost_user::VringState>(payload);
}

VhostUserChannel VhostUserChannel::connect_to(const std::string& path, Millis timeout,
                                              std::string* error) {
  const auto deadline = Clock::now() + timeout;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    if (error != nullptr) *error = "socket path too long: " + path;
    return {};
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int last_errno = 0;
  do {
    sys::UniqueFd s(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!s) {
      last_errno = errno;
      break;
    }
    if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
      return VhostUserChannel(std::move(s));
    }
    last_errno = errno;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  } while (Clock::now() < deadline);
  if (error != nullptr) {
    *error = "connect " + path + ": " + std::strerror(last_errno);
  }
  return {};
}

bool VhostUserChannel::fail(std::string message) {
  last_error_ = std::move(message);
  return false;
}

bool VhostUserChannel::send_bytes(std::span<const std::uint8_t> bytes, std::span<const int> fds) {
  if (!socket_) return fail("not connected");
  if (fds.size() > 16) return fail("too many fds");
  std::size_t sent = 0;
  bool fds_pending = !fds.empty();
  while (sent < bytes.size() || fds_pending) {
    iovec iov{const_cast<std::uint8_t*>(bytes.data() + sent), bytes.size() - sent};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 16)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fds_pending) {
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    const ssize_t n = ::sendmsg(socket_.get(), &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(std::string("sendmsg: ") + std::strerror(errno));
    }
    fds_pending = false;
    sent += static_cast<std::size_t>(n);
    if (bytes.empty()) break;
  }
  return true;
}

bool VhostUserChannel::send_raw(std::uint32_t request, std::uint32_t flags,
                                std::span<const std::uint8_t> payload, std::span<const int> fds) {
  std::vector<std::uint8_t> wire(sizeof(vhost_user::Header) + payload.size());
  const vhost_user::Header header{request, flags, static_cast<std::uint32_t>(payload.size())};
  std::memcpy(wire.data(), &header, sizeof header);
  if (!payload.empty()) std::memcpy(wire.data() + sizeof header, payload.data(), payload.size());
  sent_.push_back({request, flags, {payload.begin(), payload.end()}, fds.size()});
  return send_bytes(wire, fds);
}

std::optional<VhostUserMessage> VhostUserChannel::receive(Millis timeout) {
  if (!socket_) {
    fail("not connected");
    return std::nullopt;
  }
  const auto deadline = Clock::now() + timeout;
  VhostUserMessage msg;
  vhost_user::Header header{};
  int r = read_exact(socket_.get(), reinterpret_cast<std::uint8_t*>(&header), sizeof header,
                     deadline, &msg.fds);
  if (r == -2) {
    fail("timed out waiting for a message");
    return std::nullopt;
  }
  if (r != 0) {
    fail("connection closed by the backend");
    return std::nullopt;
  }
  if (header.size > kMaxPayload) {
    fail("reply payload too large: " + std::to_string(header.size));
    return std::nullopt;
  }
  msg.request = header.request;
  msg.flags = header.flags;
  msg.payload.resize(header.size);
  if (header.size > 0) {
    r = read_exact(socket_.get(), msg.payload.data(), header.size, deadline, &msg.fds);
    if (r != 0) {
      fail(r == -2 ? "timed out reading a payload" : "connection closed inside a message");
      return std::nullopt;
    }
  }
  return msg;
}

bool VhostUserChannel::wait_peer_closed(Millis timeout) {
  if (!socket_) return true;
  const auto deadline = Clock::now() + timeout;
  std::uint8_t buf[256];
  while (wait_readable(socket_.get(), deadline)) {
    const ssize_t n = ::recv(socket_.get(), buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) return true;
    if (n < 0 && errno != EAGAIN && errno != EINTR) return true;  // reset counts as closed
  }
  return false;
}

std::optional<VhostUserMessage> VhostUserChannel::await_reply(std::uint32_t request) {
  auto reply = receive(reply_timeout_);
  if (!reply) {
    last_error_ = std::string(vhost_user::request_name(request)) + ": " + last_error_;
    return std::nullopt;
  }
  if (reply->request != request || !reply->is_reply() ||
      (reply->flags & vhost_user::kVersionMask) != vhost_user::kVersion) {
    fail(std::string(vhost_user::request_name(request)) + ": unexpected message " +
         vhost_user::request_name(reply->request) + " flags " + std::to_string(reply->flags));
    return std::nullopt;
  }
  return reply;
}

std::optional<std::uint64_t> VhostUserChannel::send_raw_await_ack(
    std::uint32_t request, std::span<const std::uint8_t> payload, std::span<const int> fds) {
  last_ack_.reset();
  if (!send_raw(request, vhost_user::kVersion | vhost_user::kFlagNeedReply, payload, fds)) {
    return std::nullopt;
  }
  auto reply = await_reply(request);
  if (!reply) return std::nullopt;
  last_ack_ = reply->u64();
  if (!last_ack_) fail(std::string(vhost_user::request_name(request)) + ": ack without u64");
  return last_ack_;
}

bool VhostUserChannel::wants_ack(Request request) const noexcept {
  if (!reply_ack_) return false;
  if (ack_all_) return true;
  switch (request) {
    case Request::kSetMemTable:
    case Request::kNetSetMtu:
    case Request::kSetBackendReqFd:
    case Request::kAddMemReg:
    case Request::kRemMemReg:
      return true;
    default:
      return false;
  }
}

bool VhostUserChannel::send_set(Request request, std::span<const std::uint8_t> payload,
                                std::span<const int> fds) {
  const std::uint32_t req = vhost_user::to_u32(request);
  if (!wants_ack(request)) {
    if (!send_raw(req, vhost_user::kVersion, payload, fds)) {
      last_error_ = std::string(vhost_user::request_name(req)) + ": " + last_error_;
      return false;
    }
    return true;
  }
  const auto ack = send_raw_await_ack(req, payload, fds);
  if (!ack) return false;
  if (*ack != 0) {
    return fail(std::string(vhost_user::request_name(req)) + ": backend NACKed with " +
                std::to_string(*ack));
  }
  return true;
}

std::optional<VhostUserMessage> VhostUserChannel::send_get(Request request,
                                                           std::span<const std::uint8_t> payload,
                                                           std::span<const int> fds) {
  const std::uint32_t req = vhost_user::to_u32(request);
  if (!send_raw(req, vhost_user::kVersion, payload, fds)) {
    last_error_ = std::string(vhost_user::request_name(req)) + ": " + last_error_;
    return std::nullopt;
  }
  return await_reply(req);
}

std::optional<std::uint64_t> VhostUserChannel::send_get_u64(Request request) {
  auto reply = send_get(request, {});
  if (!reply) return std::nullopt;
  auto value = reply->u64();
  if (!value)
    fail(std::string(vhost_user::request_name(vhost_user::to_u32(request))) +
         ": reply without u64");
  return value;
}

bool VhostUserChannel::send_u64(Request request, std::uint64_t value) {
  return send_set(request, bytes_of(value));
}

bool VhostUserChannel::send_vring_fd(Request request, std::uint32_t index, int fd) {
  std::uint64_t value = index & vhost_user::kVringIndexMask;
  if (fd < 0) {
    value |= vhost_user::kVringInvalidFd;
    return send_set(request, bytes_of(value));
  }
  const int fds[1] = {fd};
  return send_set(request, bytes_of(value), fds);
}

std::optional<std::uint64_t> VhostUserChannel::get_features() {
  return send_get_u64(Request::kGetFeatures);
}
bool VhostUserChannel::set_features(std::uint64_t features) {
  return send_u64(Request::kSetFeatures, features);
}
std::optional<std::uint64_t> VhostUserChannel::get_protocol_features() {
  return send_get_u64(Request::kGetProtocolFeatures);
}
bool VhostUserChannel::set_protocol_features(std::uint64_t features) {
  return send_u64(Request::kSetProtocolFeatures, features);
}
bool VhostUserChannel::set_owner() {
  return send_set(Request::kSetOwner, {});
}
bool VhostUserChannel::reset_owner() {
  return send_set(Request::kResetOwner, {});
}

bool VhostUserChannel::set_mem_table(std::span<const vhost_user::MemoryRegion> regions,
                                     std::span<const int> fds) {
  std::vector<std::uint8_t> payload(sizeof(vhost_user::MemoryTableHead) +
                                    regions.size() * sizeof(vhost_user::MemoryRegion));
  const vhost_user::MemoryTableHead head{static_cast<std::uint32_t>(regions.size()), 0};
  std::memcpy(payload.data(), &head, sizeof head);
  if (!regions.empty()) {
    std::memcpy(payload.data() + sizeof head, regions.data(), regions.size_bytes());
  }
  return send_set(Request::kSetMemTable, payload, fds);
}

bool VhostUserChannel::set_log_base(std::uint64_t size, std::uint64_t offset, int fd) {
  const vhost_user::LogDescription log{size, offset};
  const int fds[1] = {fd};
  return send_set(Request::kSetLogBase, bytes_of(log),
                  fd < 0 ? std::span<const int>{} : std::span<const int>(fds));
}

bool VhostUserChannel::set_log_fd(int fd) {
  const int fds[1] = {fd};
  return send_set(Request::kSetLogFd, {},
                  fd < 0 ? std::span<const int>{} : std::span<const int>(fds));
}

bool VhostUserChannel::set_vring_num(std::uint32_t index, std::uint32_t num) {
  return send_set(Request::kSetVringNum, bytes_of(vhost_user::VringState{index, num}));
}
bool VhostUserChannel::set_vring_addr(const vhost_user::VringAddr& addr) {
  return send_set(Request::kSetVringAddr, bytes_of(addr));
}
bool VhostUserChannel::set_vring_base(std::uint32_t index, std::uint32_t base) {
  return send_set(Request::kSetVringBase, bytes_of(vhost_user::VringState{index, base}));
}

std::optional<std::uint32_t> VhostUserChannel::get_vring_base(std::uint32_t index) {
  auto reply = send_get(Request::kGetVringBase, bytes_of(vhost_user::VringState{index, 0}));
  if (!reply) return std::nullopt;
  auto state = reply->vring_state();
  if (!state) {
    fail("GET_VRING_BASE: reply without vring state");
    return std::nullopt;
  }
  if (state->index != index) {
    fail("GET_VRING_BASE: reply for ring " + std::to_string(state->index) + ", asked " +
         std::to_string(index));
    return std::nullopt;
  }
  return state->num;
}

bool VhostUserChannel::set_vring_kick(std::uint32_t index, int fd) {
  return send_vring_fd(Request::kSetVringKick, index, fd);
}
bool VhostUserChannel::set_vring_call(std::uint32_t index, int fd) {
  return send_vring_fd(Request::kSetVringCall, index, fd);
}
bool VhostUserChannel::set_vring_err(std::uint32_t index, int fd) {
  return send_vring_fd(Request::kSetVringErr, index, fd);
}
std::optional<std::uint64_t> VhostUserChannel::get_queue_num() {
  return send_get_u64(Request::kGetQueueNum);
}
bool VhostUserChannel::set_vring_enable(std::uint32_t index, bool enable) {
  return send_set(Request::kSetVringEnable,
                  bytes_of(vhost_user::VringState{index, enable ? 1u : 0u}));
}

bool VhostUserChannel::send_rarp(const std::uint8_t (&mac)[6]) {
  std::uint64_t value = 0;
  std::memcpy(&value, mac, 6);
  return send_u64(Request::kSendRarp, value);
}

bool VhostUserChannel::net_set_mtu(std::uint16_t mtu) {
  return send_u64(Request::kNetSetMtu, mtu);
}

bool VhostUserChannel::set_backend_req_fd(int fd) {
  const int fds[1] = {fd};
  return send_set(Request::kSetBackendReqFd, {}, fds);
}

std::optional<std::uint64_t> VhostUserChannel::iotlb_msg(const vhost_user::IotlbMessage& msg) {
  auto reply = send_get(Request::kIotlbMsg, bytes_of(msg));
  if (!reply) return std::nullopt;
  return reply->u64();
}

bool VhostUserChannel::set_vring_endian(std::uint32_t index, bool big_endian) {
  return send_set(Request::kSetVringEndian,
                  bytes_of(vhost_user::VringState{index, big_endian ? 1u : 0u}));
}

std::optional<std::vector<std::uint8_t>> VhostUserChannel::get_config(std::uint32_t offset,
                                                                      std::uint32_t size,
                                                                      std::uint32_t flags) {
  std::vector<std::uint8_t> payload(sizeof(vhost_user::ConfigHead) + size, 0);
  const vhost_user::ConfigHead head{offset, size, flags};
  std::memcpy(payload.data(), &head, sizeof head);
  auto reply = send_get(Request::kGetConfig, payload);
  if (!reply) return std::nullopt;
  if (reply->payload.size() <= sizeof(vhost_user::ConfigHead)) return std::vector<std::uint8_t>{};
  return std::vector<std::uint8_t>(reply->payload.begin() + sizeof(vhost_user::ConfigHead),
                                   reply->payload.end());
}

bool VhostUserChannel::set_config(std::uint32_t offset, std::span<const std::uint8_t> data,
                                  std::uint32_t flags) {
  std::vector<std::uint8_t> payload(sizeof(vhost_user::ConfigHead) + data.size());
  const vhost_user::ConfigHead head{offset, static_cast<std::uint32_t>(data.size()), flags};
  std::memcpy(payload.data(), &head, sizeof head);
  if (!data.empty()) std::memcpy(payload.data() + sizeof head, data.data(), data.size());
  return send_set(Request::kSetConfig, payload);
}

std::optional<VhostUserMessage> VhostUserChannel::get_inflight_fd(std::uint16_t num_queues,
                                                                  std::uint16_t queue_size) {
  const vhost_user::InflightDescription desc{0, 0, num_queues, queue_size, {}};
  return send_get(Request::kGetInflightFd, bytes_of(desc));
}

bool VhostUserChannel::set_inflight_fd(const vhost_user::InflightDescription& desc, int fd) {
  const int fds[1] = {fd};
  return send_set(Request::kSetInflightFd, bytes_of(desc),
                  fd < 0 ? std::span<const int>{} : std::span<const int>(fds));
}

bool VhostUserChannel::reset_device() {
  return send_set(Request::kResetDevice, {});
}

bool VhostUserChannel::vring_kick(std::uint32_t index) {
  return send_set(Request::kVringKick, bytes_of(vhost_user::VringState{index, 0}));
}

std::optional<std::uint64_t> VhostUserChannel::get_max_mem_slots() {
  return send_get_u64(Request::kGetMaxMemSlots);
}

bool VhostUserChannel::add_mem_reg(const vhost_user::MemoryRegion& region, int fd) {
  const vhost_user::SingleMemoryRegion payload{0, region};
  const int fds[1] = {fd};
  return send_set(Request::kAddMemReg, bytes_of(payload), fds);
}

bool VhostUserChannel::rem_mem_reg(const vhost_user::MemoryRegion& region) {
  const vhost_user::SingleMemoryRegion payload{0, region};
  return send_set(Request::kRemMemReg, bytes_of(payload));
}

bool VhostUserChannel::set_status(std::uint8_t status) {
  return send_u64(Request::kSetStatus, status);
}

std::optional<std::uint8_t> VhostUserChannel::get_status() {
  auto value = send_get_u64(Request::kGetStatus);
  if (!value) return std::nullopt;
  return static_cast<std::uint8_t>(*value);
}

}  // namespace xdpvhost::testing

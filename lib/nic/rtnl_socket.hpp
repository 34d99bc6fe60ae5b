#pragma once
// RAII rtnetlink socket (libmnl) for the unicast filter's requests and the
// link monitor's notifications. Bound in the network namespace of the
// thread that opens it.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

struct mnl_socket;
struct nlmsghdr;

namespace xdpvhost::nic {

class RtnlSocket {
 public:
  // groups: RTMGRP_* bitmask to subscribe to (0 for request/response use).
  // nonblocking: for notification sockets read from epoll.
  static std::unique_ptr<RtnlSocket> open(unsigned groups, bool nonblocking, std::string& error);
  ~RtnlSocket();
  RtnlSocket(const RtnlSocket&) = delete;
  RtnlSocket& operator=(const RtnlSocket&) = delete;

  int fd() const noexcept;
  std::uint32_t next_seq() noexcept { return ++seq_; }

  // Sends a request built in a buffer (nlh->nlmsg_seq is set here; set
  // NLM_F_ACK in nlmsg_flags) and waits for the kernel's answer.
  // Returns 0 or -errno from the kernel's ack.
  int request(nlmsghdr* nlh) noexcept;

  // Sends a dump request (NLM_F_DUMP) and calls `each` for every message.
  // Returns 0 or -errno.
  int dump(nlmsghdr* nlh, const std::function<void(const nlmsghdr*)>& each);

  // Reads one datagram of notifications without blocking and calls `each`
  // per message. Returns the number of messages, 0 if none was pending, or
  // -errno (-ENOBUFS: the kernel dropped notifications; resynchronise).
  int read_notifications(const std::function<void(const nlmsghdr*)>& each);

 private:
  RtnlSocket() = default;
  mnl_socket* nl_ = nullptr;
  std::uint32_t portid_ = 0;
  std::uint32_t seq_ = 0;
};

}  // namespace xdpvhost::nic

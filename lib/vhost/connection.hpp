#pragma once
// Framing of vhost-user messages on one non-blocking unix stream socket:
// header, payload and the fds passed with them (SCM_RIGHTS). Reads exactly
// one message's bytes at a time so fds stay attached to their message.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sys/unique_fd.hpp"
#include "vhost/message.hpp"

namespace xdpvhost::vhost {

class Connection {
 public:
  enum class ReadStatus : std::uint8_t { kMessage, kWouldBlock, kClosed, kError };

  explicit Connection(sys::UniqueFd fd);

  int fd() const noexcept { return fd_.get(); }

  // Reads until one whole message is in `out` (kMessage) or the socket has no
  // more bytes for now (kWouldBlock; a partial message is kept for the next
  // call). kError means framing is lost (`error` says why): close it.
  ReadStatus read(Message& out, std::string& error);

  // Sends the reply a handled message asks for, if any.
  bool reply(const Message& request, const Outcome& outcome, bool reply_ack_negotiated,
             std::string& error);

 private:
  bool send_reply(std::uint32_t request, const void* payload, std::uint32_t size,
                  std::string& error);

  sys::UniqueFd fd_;
  std::array<std::uint8_t, sizeof(MessageHeader) + kMaxPayloadSize> buffer_{};
  std::size_t have_ = 0;
  std::vector<sys::UniqueFd> fds_;
};

}  // namespace xdpvhost::vhost

#include "vhost/connection.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace xdpvhost::vhost {
namespace {

// Room for more fds than any message may carry, so an excess is seen (and
// the fds closed) rather than silently truncated.
constexpr int kFdRoom = 4 * kMaxFdsPerMessage;

}  // namespace

Connection::Connection(sys::UniqueFd fd) : fd_(std::move(fd)) {}

Connection::ReadStatus Connection::read(Message& out, std::string& error) {
  for (;;) {
    std::size_t want = sizeof(MessageHeader);
    if (have_ >= sizeof(MessageHeader)) {
      MessageHeader h;
      std::memcpy(&h, buffer_.data(), sizeof h);
      if ((h.flags & MessageHeader::kVersionMask) != MessageHeader::kVersion) {
        error = "message with protocol version " + std::to_string(h.flags & 3);
        return ReadStatus::kError;
      }
      if (h.size > kMaxPayloadSize) {
        error = "message payload of " + std::to_string(h.size) + " bytes";
        return ReadStatus::kError;
      }
      want += h.size;
      if (have_ == want) {
        out.header = h;
        std::memcpy(out.payload.data(), buffer_.data() + sizeof h, h.size);
        out.fds = std::move(fds_);
        fds_.clear();
        have_ = 0;
        return ReadStatus::kMessage;
      }
    }

    iovec iov{buffer_.data() + have_, want - have_};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kFdRoom)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return ReadStatus::kWouldBlock;
      error = std::string("recvmsg: ") + std::strerror(errno);
      return ReadStatus::kError;
    }
    // Every fd received is owned at once and counted against the message as
    // it arrives: a frontend that spreads fds over one-byte pieces of a
    // message cannot pile up more than one message may carry.
    bool too_many = (msg.msg_flags & MSG_CTRUNC) != 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int raw;
        std::memcpy(&raw, CMSG_DATA(c) + i * sizeof(int), sizeof raw);
        sys::UniqueFd fd(raw);  // closed here if it is one too many
        if (fds_.size() < static_cast<std::size_t>(kMaxFdsPerMessage))
          fds_.push_back(std::move(fd));
        else
          too_many = true;
      }
    }
    if (too_many) {
      error = "more than " + std::to_string(kMaxFdsPerMessage) + " fds passed with a message";
      fds_.clear();
      return ReadStatus::kError;
    }
    if (n == 0) return ReadStatus::kClosed;
    have_ += static_cast<std::size_t>(n);
  }
}

bool Connection::reply(const Message& request, const Outcome& outcome, bool reply_ack_negotiated,
                       std::string& error) {
  if (outcome.kind == Outcome::Kind::kReply)
    return send_reply(request.header.request, outcome.reply.data(),
                      static_cast<std::uint32_t>(outcome.reply.size()), error);
  if (request.needs_reply() && reply_ack_negotiated) {
    const std::uint64_t status = outcome.ok ? 0 : 1;
    return send_reply(request.header.request, &status, sizeof status, error);
  }
  return true;
}

bool Connection::send_reply(std::uint32_t request, const void* payload, std::uint32_t size,
                            std::string& error) {
  MessageHeader h{request, MessageHeader::kVersion | MessageHeader::kFlagReply, size};
  iovec iov[2] = {{&h, sizeof h}, {const_cast<void*>(payload), size}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = size != 0 ? 2 : 1;
  const std::size_t total = sizeof h + size;
  for (;;) {
    const ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n == static_cast<ssize_t>(total)) return true;
    // Replies are tiny; a frontend whose socket buffer is full is not reading.
    error = n < 0 ? std::string("sendmsg: ") + std::strerror(errno) : "short reply write";
    return false;
  }
}

}  // namespace xdpvhost::vhost

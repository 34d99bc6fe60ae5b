#pragma once
// One vhost-user message as received (header, payload, passed fds) and the
// outcome of handling it.

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "sys/unique_fd.hpp"
#include "vhost/protocol.hpp"

namespace xdpvhost::vhost {

struct Message {
  MessageHeader header{};
  std::array<std::uint8_t, kMaxPayloadSize> payload{};
  std::vector<sys::UniqueFd> fds;

  Request request() const noexcept { return static_cast<Request>(header.request); }
  bool needs_reply() const noexcept { return (header.flags & MessageHeader::kFlagNeedReply) != 0; }

  // The payload as T; callers check the size first (the message table does).
  template <class T>
  T as() const noexcept {
    T value;
    std::memcpy(&value, payload.data(), sizeof value);
    return value;
  }
  std::uint64_t u64() const noexcept { return as<std::uint64_t>(); }

  // Takes the i-th fd out of the message (invalid if absent).
  sys::UniqueFd take_fd(std::size_t i = 0) noexcept {
    return i < fds.size() ? std::move(fds[i]) : sys::UniqueFd{};
  }
};

// What handling a message produced.
struct Outcome {
  enum class Kind : std::uint8_t {
    kAck,    // no payload reply; a REPLY_ACK u64 if the frontend asked for one
    kReply,  // a reply payload is always sent
  };
  Kind kind = Kind::kAck;
  bool ok = true;
  bool disconnect = false;  // closed instead of answered: no reply would be true
  std::string error;        // why it failed, for the log
  std::vector<std::uint8_t> reply;

  static Outcome success() { return {}; }
  static Outcome failure(std::string why) {
    Outcome o;
    o.ok = false;
    o.error = std::move(why);
    return o;
  }
  template <class T>
  static Outcome reply_with(const T& value) {
    Outcome o;
    o.kind = Kind::kReply;
    o.reply.resize(sizeof value);
    std::memcpy(o.reply.data(), &value, sizeof value);
    return o;
  }
};

}  // namespace xdpvhost::vhost

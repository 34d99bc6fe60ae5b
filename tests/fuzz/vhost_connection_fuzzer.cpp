// Fuzz target: vhost-user framing with fds. A frontend writes a byte stream
// of vhost-user messages (well formed or not) to a real socketpair in
// arbitrary pieces, with SCM_RIGHTS fds of every kind attached to arbitrary
// pieces; the daemon's side is a real vhost::Connection read as
// SocketEndpoint reads it, and a real vhost::Device handles every message
// and answers through Connection::reply. (The datapath behind the Device is
// a DeviceBackend that keeps what it is handed and checks it: vhost_messages
// covers the real datapath and what the messages mean; this target covers
// how bytes and fds become messages.)
//
// Input: setup:u8, then operations until the input ends (at most kMaxOps):
//   setup:     bit 0: two queue pairs; bit 1: CSUM not offered
//   op:u8      op % 8:
//     0, 6     message: request:u8 flags:u8 len:u8 [len16:u16 if len == 255]
//              payload[len] [size:u16 if flags & 0x20: the header's size lies];
//              flags & 0x08: need_reply; (flags & 0xc0) == 0xc0: version
//              flags & 3. Appended to the stream, not sent yet.
//     1        raw: n:u8 bytes[n] appended to the stream (torn headers, garbage)
//     2, 7     fds: kind:u8; (op >> 5) + 1 fds of that kind go with the next
//              piece. (kind & 15) % 12: eventfd (blocking if kind & 0x10),
//              memfd and sealed memfd (of (kind >> 4) + 1 pages), pipe read
//              end, pipe write end, unix socket, /dev/null, regular file
//              (of one page, on /tmp's file system, or on tmpfs in /dev/shm
//              if kind & 0x10), directory, O_PATH fd, epoll fd, timerfd
//     3        send: n:u8 -- the next n bytes of the stream (0: all of it) as
//              one sendmsg, with the fds queued so far
//     4        pump: the daemon reads, handles and replies until it would block
//     5        hang up: the frontend shuts its side down, the daemon reads to
//              the end, and the frontend connects again (the Device stays,
//              as with SocketEndpoint)
//   At the end everything left is sent, pumped, and the frontend hangs up.
//
// Beyond the sanitizers, the target checks the framing against a model of
// the stream (the protocol: 12-byte header, version 1, a payload of at most
// kMaxPayloadSize bytes; the fds of a piece belong to the message its first
// byte is in, and a message may carry at most kMaxFdsPerMessage):
//   - every message delivered is the next one in the stream, byte for byte,
//     with exactly its fds (same files, in order);
//   - an error comes exactly when the message being read is bad (version,
//     size, too many fds -- counted as they arrive), "would block" only when
//     no complete or bad message is waiting, "closed" only after a hang-up;
//   - each reply is the one the outcome asks for (header, size, payload);
//   - fds: what the daemon holds never exceeds what one message may carry
//     plus what the Device and the backend own, and when the input is over
//     every fd the frontend passed is closed again (no leak);
//   - the backend is started only with rings the device has, never twice
//     without a stop, is stopped only while started, and has no ring left
//     after Device::disconnect (the memory is unmapped after that); kick,
//     call and err fds reach it only as non-blocking eventfds (a hostile frontend:
//     nothing a frontend passes may block a service thread).

#include <dirent.h>
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_bytes.hpp"
#include "sys/unique_fd.hpp"
#include "vhost/connection.hpp"
#include "vhost/device.hpp"
#include "vhost/protocol.hpp"

namespace {

using namespace xdpvhost;
using fuzz::FuzzBytes;
using sys::UniqueFd;

constexpr int kMaxOps = 4096;
constexpr std::size_t kMaxPieceFds = 40;  // more than kFdRoom: MSG_CTRUNC is reached too
constexpr std::size_t kHeader = sizeof(vhost::MessageHeader);

[[noreturn]] void violated(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "vhost_connection_fuzzer: invariant violated: %s%s%s\n", what,
               detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

const std::string& private_dir() {
  static const std::string dir = [] {
    char name[] = "/tmp/xdpvhost-fuzz-vhost-XXXXXX";
    if (::mkdtemp(name) == nullptr) std::abort();
    return std::string(name);
  }();
  return dir;
}

// A one-page file in the private directory, or in /dev/shm (tmpfs).
const std::string& regular_file(bool tmpfs) {
  static const std::array<std::string, 2> paths = [] {
    std::array<std::string, 2> p{private_dir() + "/file", ""};
    char shm[] = "/dev/shm/xdpvhost-fuzz-vhost-XXXXXX";
    const int fd = ::mkstemp(shm);
    if (fd >= 0) {
      ::close(fd);
      p[1] = shm;
    } else {
      p[1] = p[0];  // no /dev/shm: the other one
    }
    for (const auto& path : p) {
      const int f = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (f < 0 || ::ftruncate(f, 4096) != 0) std::abort();
      ::close(f);
    }
    return p;
  }();
  return paths[tmpfs ? 1 : 0];
}

void remove_files() {
  ::unlink(regular_file(false).c_str());
  ::unlink(regular_file(true).c_str());
  ::rmdir(private_dir().c_str());
}

// The directory stays open and is read again from the start each time (the
// fds are listed anew as of that read): opening and closing it on every
// count cost more than the count.
XDPVHOST_FUZZ_HELPER int count_open_fds() {
  static DIR* const d = [] {
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) std::abort();
    return dir;
  }();
  ::rewinddir(d);
  int n = 0;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  return n - 1;  // the directory's own fd
}

XDPVHOST_FUZZ_HELPER std::string fd_link(int fd) {
  char path[64], target[256];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  const ssize_t n = ::readlink(path, target, sizeof target - 1);
  return n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string();
}

XDPVHOST_FUZZ_HELPER bool is_nonblocking_eventfd(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && (flags & O_NONBLOCK) != 0 && fd_link(fd) == "anon_inode:[eventfd]";
}

// Which file an fd is: anonymous inodes (eventfd, epoll, timerfd) share one
// inode, so an eventfd also carries a counter value unique to it.
struct FdId {
  dev_t dev = 0;
  ino_t ino = 0;
  mode_t mode = 0;
  std::uint64_t tag = 0;
  bool operator==(const FdId&) const = default;
};

XDPVHOST_FUZZ_HELPER FdId identify(int fd) {
  FdId id;
  struct stat st {};
  if (::fstat(fd, &st) != 0) violated("fstat of a passed fd", std::strerror(errno));
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.mode = st.st_mode;
  // Anonymous inodes have no file type bits; only then is the link read.
  if ((st.st_mode & S_IFMT) == 0 && fd_link(fd) == "anon_inode:[eventfd]") {
    // Read the tag and put it back (non-blocking: a blocking eventfd with a
    // counter of 0 would wait).
    const int flags = ::fcntl(fd, F_GETFL);
    ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
    std::uint64_t v = 0;
    if (::read(fd, &v, sizeof v) == static_cast<ssize_t>(sizeof v)) {
      id.tag = v;
      [[maybe_unused]] auto n = ::write(fd, &v, sizeof v);
    }
    ::fcntl(fd, F_SETFL, flags);
  }
  return id;
}

// One fd of the kind the input names; the frontend's copy is closed once it
// is sent.
UniqueFd make_fd(std::uint8_t kind, std::uint64_t tag) {
  switch ((kind & 15) % 12) {
    case 0: {
      UniqueFd fd(::eventfd(0, EFD_CLOEXEC | ((kind & 0x10) ? 0 : EFD_NONBLOCK)));
      if (fd.valid()) [[maybe_unused]]
        auto n = ::write(fd.get(), &tag, sizeof tag);
      return fd;
    }
    case 1:
    case 2: {
      UniqueFd fd(::memfd_create("fuzz-vhost", MFD_CLOEXEC | MFD_ALLOW_SEALING));
      if (!fd.valid() || ::ftruncate(fd.get(), ((kind >> 4) + 1) * 4096) != 0) return {};
      if ((kind & 15) % 12 == 2)
        ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
      return fd;
    }
    case 3:
    case 4: {
      int p[2];
      if (::pipe2(p, O_CLOEXEC) != 0) return {};
      UniqueFd read_end(p[0]), write_end(p[1]);
      return (kind & 15) % 12 == 3 ? std::move(read_end) : std::move(write_end);
    }
    case 5: {
      int sv[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return {};
      UniqueFd other(sv[1]);
      return UniqueFd(sv[0]);
    }
    case 6:
      return UniqueFd(::open("/dev/null", O_RDWR | O_CLOEXEC));
    case 7:
      // Opened again each time: making files costs more than all the rest.
      return UniqueFd(::open(regular_file(kind & 0x10).c_str(), O_RDWR | O_CLOEXEC));
    case 8:
      return UniqueFd(::open(private_dir().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    case 9:
      return UniqueFd(::open(private_dir().c_str(), O_PATH | O_CLOEXEC));
    case 10:
      return UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
    default:
      return UniqueFd(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  }
}

// The datapath side, as the Device sees it: keeps each ring handed over
// (with its memory and fds) until it is stopped.
class Backend final : public vhost::DeviceBackend {
 public:
  explicit Backend(std::uint32_t vrings) : vrings_(vrings) {}

  void start_queue(vhost::QueueStart start) override {
    if (start.vring >= vrings_) violated("start_queue of a ring the device does not have");
    if (queues_[start.vring]) violated("start_queue of a running ring");
    if (start.memory == nullptr) violated("start_queue without memory");
    for (const UniqueFd* fd : {&start.kick, &start.call, &start.err})
      if (fd->valid() && !is_nonblocking_eventfd(fd->get()))
        violated("a kick/call/err fd that is not a non-blocking eventfd", fd_link(fd->get()));
    queues_[start.vring] = std::move(start);
    ++started;
  }
  std::optional<std::uint16_t> stop_queue(std::uint32_t vring, vhost::RingStop) override {
    if (vring >= vrings_ || !queues_[vring]) violated("stop_queue of a ring that is not running");
    const std::uint16_t base = queues_[vring]->ring.last_avail_idx;
    queues_[vring].reset();
    return base;
  }
  void set_mtu(std::uint32_t) override {}

  unsigned started = 0;  // for the report

  bool idle() const {
    for (const auto& q : queues_)
      if (q) return false;
    return true;
  }

 private:
  std::uint32_t vrings_;
  std::array<std::optional<vhost::QueueStart>, vhost::Device::kMaxVrings> queues_;
};

struct Piece {
  std::size_t start = 0;
  std::vector<FdId> fds;
};

// What the frontend sent on the current connection, and how far the daemon
// got: the model the Connection is checked against.
struct Stream {
  std::string sent;
  std::vector<Piece> pieces;  // those with fds
  std::size_t next = 0;       // offset of the next message not yet delivered
  bool hung_up = false;

  struct Next {
    bool header = false;  // its header is complete
    bool bad = false;     // wrong version, too long, or too many fds so far
    bool complete = false;
    std::size_t end = 0;
    vhost::MessageHeader h{};
    std::vector<FdId> fds;  // of the pieces starting within what may be read of it
  };
  Next next_message() const {
    Next n;
    std::size_t limit = sent.size();
    if (sent.size() - next >= kHeader) {
      n.header = true;
      std::memcpy(&n.h, sent.data() + next, kHeader);
      if ((n.h.flags & vhost::MessageHeader::kVersionMask) != vhost::MessageHeader::kVersion ||
          n.h.size > vhost::kMaxPayloadSize) {
        n.bad = true;
        limit = next + kHeader;  // the Connection reads no further
      } else {
        n.end = next + kHeader + n.h.size;
        n.complete = sent.size() >= n.end;
        limit = std::min(limit, n.end);
      }
    }
    for (const Piece& p : pieces)
      if (p.start >= next && p.start < limit) n.fds.insert(n.fds.end(), p.fds.begin(), p.fds.end());
    if (n.fds.size() > static_cast<std::size_t>(vhost::kMaxFdsPerMessage)) n.bad = true;
    return n;
  }
};

struct Frontend {
  std::unique_ptr<Backend> backend;  // outlives the device
  std::unique_ptr<vhost::Device> device;
  std::unique_ptr<vhost::Connection> connection;
  UniqueFd ours;
  Stream stream;
  std::string pending;               // appended, not yet sent
  std::vector<UniqueFd> queued_fds;  // go with the next piece
  std::vector<FdId> queued_ids;
  std::uint64_t next_tag = 1;
  // What happened (XDPVHOST_FUZZ_REPORT=1), to check that seeds do what they say.
  unsigned messages = 0, refused = 0, sessions = 1;
  std::string ends;

  void open() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
      violated("socketpair", std::strerror(errno));
    connection = std::make_unique<vhost::Connection>(UniqueFd(sv[0]));
    ours.reset(sv[1]);
    stream = Stream{};
  }
  // The session ends (as SocketEndpoint ends it): the device forgets it,
  // the frontend connects again and starts a new stream.
  void reconnect() {
    ++sessions;
    device->disconnect();
    if (!backend->idle()) violated("a ring still runs after Device::disconnect");
    connection.reset();
    ours.reset();
    pending.clear();
    queued_fds.clear();
    queued_ids.clear();
    open();
  }

  void queue_fds(std::uint8_t kind, std::size_t count) {
    for (std::size_t i = 0; i < count && queued_fds.size() < kMaxPieceFds; ++i) {
      UniqueFd fd = make_fd(kind, next_tag++);
      if (!fd.valid()) continue;
      queued_ids.push_back(identify(fd.get()));
      queued_fds.push_back(std::move(fd));
    }
  }

  // Sends the next `n` bytes (0: all) with the queued fds.
  void send(std::size_t n) {
    if (stream.hung_up) return;
    if (n == 0 || n > pending.size()) n = pending.size();
    if (n == 0) return;  // fds need at least one byte to travel with
    iovec iov{pending.data(), n};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    std::vector<char> control(CMSG_SPACE(sizeof(int) * kMaxPieceFds));
    if (!queued_fds.empty()) {
      msg.msg_control = control.data();
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * queued_fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * queued_fds.size());
      for (std::size_t i = 0; i < queued_fds.size(); ++i) {
        const int raw = queued_fds[i].get();
        std::memcpy(CMSG_DATA(c) + i * sizeof(int), &raw, sizeof raw);
      }
    }
    ssize_t sent = ::sendmsg(ours.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pump();  // the daemon has not read for a while
      if (stream.hung_up) return;
      sent = ::sendmsg(ours.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    if (sent <= 0) return;  // still full: the piece is not sent
    if (!queued_fds.empty()) stream.pieces.push_back({stream.sent.size(), queued_ids});
    stream.sent.append(pending, 0, static_cast<std::size_t>(sent));
    pending.erase(0, static_cast<std::size_t>(sent));
    queued_fds.clear();  // in flight now: the frontend's copies close
    queued_ids.clear();
  }

  void hang_up() {
    ::shutdown(ours.get(), SHUT_WR);
    stream.hung_up = true;
    pump();
    if (stream.hung_up) violated("the daemon did not see the frontend hang up");
  }

  void check_fd_bound(int baseline) const {
    // The daemon's end of the socket, at most one message's fds in the
    // Connection, three per ring in the Device and in the backend, one per
    // memory region (of the table and, while rings restart, the one before):
    // anything beyond is piling up.
    const int held =
        count_open_fds() - baseline - 1 /* ours */ - static_cast<int>(queued_fds.size());
    const int allowed = 1 + vhost::kMaxFdsPerMessage + 6 * vhost::Device::kMaxVrings +
                        2 * static_cast<int>(vhost::kMaxMemoryRegions);
    if (held > allowed)
      violated("the daemon holds more fds than a connection may", std::to_string(held));
  }

  void check_reply(const vhost::Message& m, const vhost::Outcome& outcome, bool ack) {
    std::vector<std::uint8_t> want;
    auto put = [&](const void* payload, std::uint32_t size) {
      const vhost::MessageHeader h{
          m.header.request, vhost::MessageHeader::kVersion | vhost::MessageHeader::kFlagReply,
          size};
      want.resize(kHeader + size);
      std::memcpy(want.data(), &h, kHeader);
      if (size != 0) std::memcpy(want.data() + kHeader, payload, size);
    };
    if (outcome.kind == vhost::Outcome::Kind::kReply) {
      put(outcome.reply.data(), static_cast<std::uint32_t>(outcome.reply.size()));
    } else if (m.needs_reply() && ack) {
      const std::uint64_t status = outcome.ok ? 0 : 1;
      put(&status, sizeof status);
    }
    std::vector<std::uint8_t> got(want.size() + 1);
    const ssize_t n = want.empty() ? 0 : ::recv(ours.get(), got.data(), got.size(), MSG_DONTWAIT);
    got.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    if (got != want) violated("a reply other than the outcome asks for");
  }

  // SocketEndpoint's loop: read, handle, reply, until the socket would block
  // or the session ends.
  void pump() {
    vhost::Message message;
    for (;;) {
      std::string error;
      const Stream::Next next = stream.next_message();
      const auto status = connection->read(message, error);
      switch (status) {
        case vhost::Connection::ReadStatus::kWouldBlock: {
          if (next.bad) violated("a bad message was not refused");
          if (next.complete) violated("a complete message was not delivered");
          char byte;
          if (::recv(ours.get(), &byte, 1, MSG_DONTWAIT | MSG_PEEK) >= 0)
            violated("a reply nobody asked for");
          return;
        }
        case vhost::Connection::ReadStatus::kClosed:
          if (!stream.hung_up) violated("closed, but the frontend did not hang up");
          if (next.bad || next.complete) violated("closed with a message waiting");
          ends += " closed;";
          reconnect();
          return;
        case vhost::Connection::ReadStatus::kError:
          if (!next.bad) violated("framing error on a good message", error);
          ends += " " + error + ";";
          reconnect();
          return;
        case vhost::Connection::ReadStatus::kMessage:
          break;
      }
      if (next.bad || !next.complete) violated("a message delivered before it was all there");
      if (std::memcmp(&message.header, &next.h, kHeader) != 0)
        violated("a message with another header than was sent");
      if (std::memcmp(message.payload.data(), stream.sent.data() + stream.next + kHeader,
                      next.h.size) != 0)
        violated("a message with another payload than was sent");
      if (message.fds.size() != next.fds.size())
        violated("a message with other fds than were sent");
      for (std::size_t i = 0; i < message.fds.size(); ++i)
        if (!message.fds[i].valid() || !(identify(message.fds[i].get()) == next.fds[i]))
          violated("a message with other fds than were sent");
      stream.next = next.end;

      const bool ack = device->reply_ack_negotiated();  // as SocketEndpoint: before handling
      vhost::Outcome outcome = device->handle(message);
      ++messages;
      if (!outcome.ok) {
        ++refused;
        ends += " refused: " + outcome.error + ";";
      }
      if (outcome.disconnect) {  // closed, not answered (SocketEndpoint)
        reconnect();
        return;
      }
      // The frontend reads every reply, so sending one cannot fail.
      if (!connection->reply(message, outcome, ack, error))
        violated("a reply could not be sent", error);
      check_reply(message, outcome, ack);
      message.fds.clear();
    }
  }
};

void append_message(Frontend& f, FuzzBytes& in) {
  const std::uint8_t request = in.u8();
  const std::uint8_t fl = in.u8();
  std::uint32_t flags = (fl & 0xc0) == 0xc0 ? (fl & 3u) : vhost::MessageHeader::kVersion;
  if (fl & 0x08) flags |= vhost::MessageHeader::kFlagNeedReply;
  std::size_t len = in.u8();
  if (len == 255) len = in.u16() % 8192;
  const auto payload = in.take(len);
  const std::uint32_t size = (fl & 0x20) ? in.u16() : static_cast<std::uint32_t>(payload.size());
  const vhost::MessageHeader h{request, flags, size};
  f.pending.append(reinterpret_cast<const char*>(&h), kHeader);
  f.pending.append(reinterpret_cast<const char*>(payload.data()), payload.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = [] {
    spdlog::set_level(spdlog::level::off);
    regular_file(false);
    std::atexit(remove_files);  // after the paths exist: it runs before they are destroyed
    return true;
  }();
  (void)quiet;
  const int baseline = count_open_fds();
  {
    FuzzBytes in(data, size);
    const std::uint8_t setup = in.u8();
    vhost::DeviceOptions options;
    options.queue_pairs = 1 + (setup & 1u);
    options.offer_csum = (setup & 2u) == 0;
    Frontend f;
    f.backend = std::make_unique<Backend>(2 * options.queue_pairs);
    f.device = std::make_unique<vhost::Device>(options, *f.backend);
    f.open();
    for (int step = 0; step < kMaxOps && !in.empty(); ++step) {
      const std::uint8_t op = in.u8();
      switch (op % 8) {
        case 0:
        case 6:
          append_message(f, in);
          break;
        case 1: {
          const auto raw = in.take(in.u8());
          f.pending.append(reinterpret_cast<const char*>(raw.data()), raw.size());
          break;
        }
        case 2:
        case 7:
          f.queue_fds(in.u8(), (op >> 5) + 1u);
          break;
        case 3:
          f.send(in.u8());
          break;
        case 4:
          f.pump();
          f.check_fd_bound(baseline);
          break;
        case 5:
          f.hang_up();
          break;
      }
    }
    f.send(0);
    f.pump();
    f.check_fd_bound(baseline);
    f.hang_up();
    f.device->disconnect();
    if (!f.backend->idle()) violated("a ring still runs after Device::disconnect");
    if (std::getenv("XDPVHOST_FUZZ_REPORT") != nullptr)
      std::fprintf(stderr, "  %u sessions, %u messages (%u refused), %u rings started;%s\n",
                   f.sessions, f.messages, f.refused, f.backend->started, f.ends.c_str());
  }
  if (count_open_fds() != baseline)
    violated("fds leaked", std::to_string(count_open_fds() - baseline));
  return 0;
}

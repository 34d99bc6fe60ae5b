#pragma once
// The control socket as a fuzz target drives it (control_protocol_fuzzer.cpp,
// control_api_fuzzer.cpp): one or two clients write arbitrary bytes in
// arbitrary pieces to a real ControlServer on a unix socket in a private
// directory, and every reply line is checked against an independent model of
// the protocol. What answers the lines is up to the target (its Service).
//
// Input: limit:u8 mode:u8, then the bytes the clients send.
//   limit: max_request_bytes = 64 << (limit % 8)  (64 .. 8192)
//   mode:  bits 0-5: 0 every client's bytes in one write, else the seed of a
//          small PRNG cutting them into pieces: each piece 1..2^k bytes, k
//          drawn anew per piece from 0..11, so one-byte pieces, cuts inside
//          a line, a CR apart from its LF and pieces holding many lines all
//          come up, in about 7 pieces for a 600-byte input;
//          bit 6: two clients, lines alternating between them (line i to
//          client i % 2), their pieces interleaved
//
// Why not many small pieces: each piece is a round of ~6 syscalls (send,
// epoll_wait, the server's recv and its next speculative recv, the client's
// recv), and pieces of 1..(mode % 64 + 1) bytes made ~150 rounds of a
// 600-byte input, nearly all of an execution's cost. The framing's cases
// are where cuts fall, not how many there are.
//
// The model: each client gets exactly one reply per request line that is
// not a notification (JSON-RPC 2.0: a valid request object without "id"), in
// order, with the request's id (null when it has none that is valid, or is
// not JSON, or nests too deeply), "jsonrpc": "2.0" and exactly one of result
// and error; a line longer than the limit is answered request_too_large and
// the client is hung up on; no reply is an internal error (-32603: an
// exception, or a result not matching its schema); the server keeps reading
// a client that reads its replies; no session outlives its client.

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "control/control_server.hpp"
#include "proto/rpc_error_code.hpp"
#include "fuzz_bytes.hpp"
#include "json_schema/json_nesting.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::fuzz::control {

using daemon::json_nesting_depth;
using daemon::kMaxJsonNesting;
using daemon::RpcErrorCode;
using nlohmann::json;
using sys::UniqueFd;

[[noreturn]] inline void violated(const char* what, std::string_view detail = {}) {
  std::fprintf(stderr, "control fuzz target: invariant violated: %s%s%.*s\n", what,
               detail.empty() ? "" : ": ", static_cast<int>(detail.size()), detail.data());
  std::abort();
}

// The private directory every socket of this process lives in (removed at
// exit with what is left in it): on tmpfs (/dev/shm) where there is one, as
// every input binds and unlinks sockets there, and a bind on ext4 (/tmp on
// these machines) allocates an inode through the journal.
inline const std::string& private_dir() {
  static const std::string dir = [] {
    struct stat shm {};
    const bool tmpfs =
        ::stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode) && ::access("/dev/shm", W_OK) == 0;
    std::string name =
        tmpfs ? "/dev/shm/xdpvhost-fuzz-control-XXXXXX" : "/tmp/xdpvhost-fuzz-control-XXXXXX";
    if (::mkdtemp(name.data()) == nullptr) std::abort();
    return name;
  }();
  return dir;
}

inline void remove_dir() {
  std::error_code ignored;
  std::filesystem::remove_all(private_dir(), ignored);
}

inline std::string control_socket_path() {
  return private_dir() + "/control.sock";
}

// Once per process: logging off, the private directory made (and removed at
// exit, the handler registered after the path exists so that it runs before
// the path is destroyed).
inline void init_process() {
  static const bool done = [] {
    spdlog::set_default_logger(spdlog::null_logger_mt("fuzz"));
    private_dir();
    std::atexit(remove_dir);
    return true;
  }();
  (void)done;
  spdlog::set_level(spdlog::level::off);
}

// What a client expects back, from its own bytes.
struct Expected {
  std::vector<json> ids;   // one reply per entry, in order, with this id
  bool too_large = false;  // the last reply is request_too_large, then EOF
};

// JSON-RPC 2.0 by the spec: a notification is a request object ("jsonrpc":
// "2.0", a string method, nothing but jsonrpc/method/params) without "id".
// The dispatcher answers a notification with nothing, whatever else is wrong
// with it.
inline void expect_line(std::string_view line, Expected& out) {
  if (json_nesting_depth(line, kMaxJsonNesting) > kMaxJsonNesting) {
    out.ids.emplace_back(nullptr);
    return;
  }
  const json request = json::parse(line.begin(), line.end(), nullptr, false);
  if (request.is_discarded() || !request.is_object()) {
    out.ids.emplace_back(nullptr);
    return;
  }
  if (!request.contains("id")) {
    bool envelope = request.contains("jsonrpc") && request["jsonrpc"] == "2.0" &&
                    request.contains("method") && request["method"].is_string();
    for (const auto& [key, value] : request.items())
      envelope = envelope && (key == "jsonrpc" || key == "method" || key == "params");
    if (envelope) return;  // a notification: no reply
    out.ids.emplace_back(nullptr);
    return;
  }
  const json& id = request["id"];
  out.ids.push_back(id.is_string() || id.is_number_integer() || id.is_null() ? id : json(nullptr));
}

inline Expected expect(std::string_view bytes, std::size_t limit) {
  Expected out;
  for (;;) {
    const std::size_t end = bytes.find('\n');
    std::string_view line = bytes.substr(0, end);
    if (line.size() > limit) {
      out.too_large = true;
      out.ids.emplace_back(nullptr);
      return out;
    }
    if (end == std::string_view::npos) return out;  // a partial line, dropped at EOF
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) expect_line(line, out);
    bytes.remove_prefix(end + 1);
  }
}

struct Client {
  UniqueFd fd;
  std::string sent;     // every byte, in order (what the server saw)
  std::string pending;  // not yet written
  std::string replies;  // received, not yet split into lines
  std::vector<json> lines;
  bool eof = false;
  bool eof_before_hang_up = false;  // the server hung up first

  void connect() {
    fd.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", control_socket_path().c_str());
    if (!fd.valid() || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
      violated("connect", std::strerror(errno));
  }
  // Writes what it can of `pending`.
  void write() {
    while (!pending.empty() && !eof) {
      const ssize_t n = ::send(fd.get(), pending.data(), pending.size(), MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) eof = true;  // hung up on
      if (n <= 0) return;  // full: the server waits for us to read
      sent.append(pending, 0, static_cast<std::size_t>(n));
      pending.erase(0, static_cast<std::size_t>(n));
    }
  }
  void read() {
    // Not on the stack: ASan poisons and unpoisons a local's shadow (8 KiB
    // for this one) on every call, and read() runs after every piece.
    static char buf[65536];
    for (;;) {
      const ssize_t n = ::recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT);
      // Closed, or reset (the server hung up with our bytes unread).
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) eof = true;
      if (n <= 0) break;
      replies.append(buf, static_cast<std::size_t>(n));
    }
    for (std::size_t end; (end = replies.find('\n')) != std::string::npos;) {
      json reply =
          json::parse(replies.begin(), replies.begin() + static_cast<long>(end), nullptr, false);
      if (reply.is_discarded()) violated("a reply line is not JSON", replies.substr(0, end));
      lines.push_back(std::move(reply));
      replies.erase(0, end + 1);
    }
  }
};

inline void check(const Client& client, std::size_t limit) {
  if (!client.replies.empty()) violated("a reply without its newline", client.replies);
  const Expected expected = expect(client.sent, limit);
  if (client.lines.size() != expected.ids.size())
    violated("replies do not match the request lines",
             std::to_string(client.lines.size()) + " replies, " +
                 std::to_string(expected.ids.size()) + " expected");
  for (std::size_t i = 0; i < client.lines.size(); ++i) {
    const json& r = client.lines[i];
    // Dumped only for the message of a violation, not for every reply.
    const auto text = [&r] { return r.dump(-1, ' ', false, json::error_handler_t::replace); };
    if (!r.is_object() || !r.contains("jsonrpc") || r["jsonrpc"] != "2.0" || !r.contains("id"))
      violated("a reply without jsonrpc 2.0 and an id", text());
    if (r["id"] != expected.ids[i]) violated("a reply with another request's id", text());
    if (r.contains("result") == r.contains("error"))
      violated("a reply needs exactly one of result and error", text());
    if (r.contains("error")) {
      const json& e = r["error"];
      if (!e.is_object() || !e.contains("code") || !e["code"].is_number_integer() ||
          !e.contains("message") || !e["message"].is_string())
        violated("an error object without code and message", text());
      const int code = e["code"].get<int>();
      if (code == static_cast<int>(RpcErrorCode::kInternalError))
        violated("an internal error", text());
      const bool too_large = code == static_cast<int>(RpcErrorCode::kRequestTooLarge);
      if (too_large != (expected.too_large && i + 1 == client.lines.size()))
        violated("request_too_large where it is not, or not where it is", text());
    } else if (expected.too_large && i + 1 == client.lines.size()) {
      violated("a line over the limit was answered", text());
    }
  }
  if (expected.too_large && !client.eof_before_hang_up)
    violated("not hung up on after request_too_large");
}

inline std::uint32_t next(std::uint32_t& state) {
  state ^= state << 13;
  state ^= state >> 17;
  state ^= state << 5;
  return state;
}

// A piece's length from one PRNG draw: the top byte picks the scale 2^k (k
// in 0..11), the low 24 bits the length within it.
inline std::size_t piece_length(std::uint32_t r) {
  const std::uint32_t scale = std::uint32_t{1} << ((r >> 24) % 12);
  return (r & 0xffffffu) % scale + 1;
}

// One input: the clients connect to the service's control socket, write
// their pieces in turns (reading replies as they come), hang up, and their
// replies are checked. `Service` has open(max_request_bytes) (the control
// socket listens from then on), control() (the ControlServer), settle() (runs
// every ready handler); the caller closes it.
template <class Service>
void run_session(Service& service, const std::uint8_t* data, std::size_t size) {
  FuzzBytes in(data, size);
  const std::size_t limit = std::size_t{64} << (in.u8() % 8);
  const std::uint8_t mode = in.u8();
  const auto rest = in.take(size);
  const std::string_view bytes(reinterpret_cast<const char*>(rest.data()), rest.size());
  const bool two = (mode & 0x40) != 0;

  service.open(limit);
  std::array<Client, 2> clients;
  const std::size_t nclients = two ? 2 : 1;
  for (std::size_t c = 0; c < nclients; ++c) clients[c].connect();

  // Each client's bytes, cut into pieces; the pieces are sent in turns.
  std::array<std::vector<std::string>, 2> pieces;
  {
    std::array<std::string, 2> streams;
    std::size_t line = 0;
    for (std::size_t at = 0; at < bytes.size();) {
      const std::size_t end = std::min(bytes.find('\n', at), bytes.size() - 1);
      streams[two ? line % 2 : 0].append(bytes.substr(at, end + 1 - at));
      at = end + 1;
      ++line;
    }
    std::uint32_t state = (mode & 0x3f) * 2654435761u + 1;
    for (std::size_t c = 0; c < nclients; ++c) {
      std::string_view s = streams[c];
      while (!s.empty()) {
        const std::uint32_t r = next(state);
        const std::size_t n = (mode & 0x3f) == 0 ? s.size() : piece_length(r);
        pieces[c].emplace_back(s.substr(0, n));
        s.remove_prefix(std::min(n, s.size()));
      }
    }
  }
  std::array<std::size_t, 2> sent_pieces{};
  int rounds = 0;
  for (bool more = true; more;) {
    if (++rounds > 100000) violated("the server stopped reading a client that reads its replies");
    more = false;
    for (std::size_t c = 0; c < nclients; ++c) {
      Client& client = clients[c];
      if (sent_pieces[c] < pieces[c].size()) {
        client.pending += pieces[c][sent_pieces[c]++];
        more = true;
      }
      client.write();
      service.settle();
      client.read();
      more = more || (!client.pending.empty() && !client.eof);
    }
  }
  // The clients go away: what is left of a partial line is dropped.
  for (std::size_t c = 0; c < nclients; ++c) {
    clients[c].eof_before_hang_up = clients[c].eof;
    ::shutdown(clients[c].fd.get(), SHUT_WR);
  }
  for (int i = 0; i < 100 && service.control().clients() > 0; ++i) {
    service.settle();
    for (std::size_t c = 0; c < nclients; ++c) clients[c].read();
  }
  if (service.control().clients() != 0) violated("a client session outlived its client");
  for (std::size_t c = 0; c < nclients; ++c) {
    clients[c].read();
    check(clients[c], limit);
    if (std::getenv("XDPVHOST_FUZZ_REPORT") != nullptr) {
      // What each request got (to check that seeds do what they say).
      std::fprintf(stderr, "  client %zu:", c);
      for (const json& r : clients[c].lines)
        std::fprintf(stderr, " %s:%s", r["id"].dump().c_str(),
                     r.contains("error") ? r["error"]["code"].dump().c_str() : "ok");
      std::fprintf(stderr, "%s\n", clients[c].eof_before_hang_up ? " (hung up on)" : "");
    }
  }
}

}  // namespace xdpvhost::fuzz::control

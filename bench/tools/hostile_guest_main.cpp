// xvb-hostile-guest: the hostile neighbour of the noisy-neighbour scenario
// (the noisy-neighbour scenario). A vhost-user frontend (the test frontend of tests/frontend, as
// the HostileFrontend integration tests use it) on a second port of the
// daemon, served by the same service thread as the well-behaved guest, that
// attacks the datapath for as long as it runs:
//
//   tx_overlong   every free TX descriptor heads an indirect table of
//                 --chain descriptors (default 256) of --segment bytes each,
//                 all pointing to one buffer: each chain (128 KiB) is beyond
//                 any frame (the daemon stops walking it at 64 KiB and breaks
//                 the queue: beyond_any_frame). Returned chains are posted
//                 again at once, the TX queue is kicked every --period-us.
//   tx_oversize   the same with chains just under that limit (default 127
//                 descriptors of 512 bytes: 63.5 KiB, no GSO header): each one
//                 is walked in full and dropped as oversize, and the queue
//                 stays up; the daemon's descriptor budget per round bounds
//                 what it costs the neighbours.
//   reset_storm   publishes RX chains of zero-length descriptors (one
//                 indirect table of --chain entries per head), then resets the
//                 device and negotiates again (GET_VRING_BASE, SET_MEM_TABLE,
//                 rings: every step a command the control thread posts to the
//                 service thread), every --period-us.
//
// Prints {"ready": true} once negotiated, then attacks until --duration
// seconds passed or stdin reaches EOF (the harness closes it), and prints
// one JSON line with what it did. Exit status 1 if the first negotiation
// failed.

#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "frontend/frontend.hpp"
#include "virtio/split_ring_layout.hpp"

namespace xdpvhost::bench {
namespace {

namespace fe = testing;

enum class Attack { kTxOverlong, kTxOversize, kResetStorm };

const char* attack_name(Attack a) {
  switch (a) {
    case Attack::kTxOverlong:
      return "tx_overlong";
    case Attack::kTxOversize:
      return "tx_oversize";
    case Attack::kResetStorm:
      return "reset_storm";
  }
  return "?";
}

struct Options {
  std::string socket;
  Attack attack = Attack::kTxOverlong;
  double duration = 3600;
  std::uint32_t period_us = 100;
  std::uint32_t chain = 0;      // descriptors per chain (0: the attack's default)
  std::uint32_t segment = 512;  // bytes per descriptor (tx_overlong)
  std::uint16_t queue_size = 256;
};

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

// Sleeps up to `us`; false once stdin is at EOF (or in error).
bool wait_or_stdin_closed(std::uint32_t us) {
  pollfd p{.fd = STDIN_FILENO, .events = POLLIN, .revents = 0};
  const int ms = static_cast<int>((us + 999) / 1000);
  if (::poll(&p, 1, us < 1000 ? 0 : ms) > 0) {
    char buf[256];
    if (::read(STDIN_FILENO, buf, sizeof buf) <= 0) return false;
  }
  if (us < 1000) ::usleep(us);
  return true;
}

struct Stats {
  std::uint64_t rounds = 0;
  std::uint64_t chains_posted = 0;
  std::uint64_t chains_returned = 0;
  std::uint64_t kicks = 0;
  std::uint64_t resets = 0;
  std::uint64_t reset_failures = 0;
};

fe::NegotiateOptions negotiate_options(const Options& o) {
  fe::NegotiateOptions n;
  n.queue_size = o.queue_size;
  n.indirect_capacity = o.chain;  // one table per head, reused
  n.buffer_slot_size = 2048;
  return n;
}

// TX: every free head -> an indirect table of o.chain descriptors over one
// buffer of o.segment bytes (o.chain * o.segment bytes claimed).
void post_overlong_tx(fe::Frontend& f, const Options& o, std::uint64_t buffer, Stats& s) {
  fe::DriverQueue& tx = f.tx_queue();
  while (tx.get_used()) ++s.chains_returned;
  const std::vector<fe::BufferSegment> segments(o.chain,
                                                fe::BufferSegment{buffer, o.segment, false});
  while (tx.num_free() > 0 && tx.add_outbuf(segments, true)) ++s.chains_posted;
  tx.notify();
  ++s.kicks;
}

// RX: every free head -> one indirect table (at `table`, o.chain entries) of
// zero-length writable entries.
void post_empty_rx(fe::Frontend& f, const Options& o, std::uint64_t table, Stats& s) {
  fe::DriverQueue& rx = f.rx_queue();
  auto* entries = rx.memory().as<virtio::Descriptor>(table);
  for (std::uint32_t i = 0; i < o.chain; ++i) {
    const bool last = i + 1 == o.chain;
    entries[i].addr = table;
    entries[i].len = 0;
    entries[i].flags = static_cast<std::uint16_t>(virtio::Descriptor::kFlagWrite |
                                                  (last ? 0 : virtio::Descriptor::kFlagNext));
    entries[i].next = static_cast<std::uint16_t>(last ? 0 : i + 1);
  }
  for (std::uint32_t n = 0; n < rx.size(); ++n) {
    const auto head = rx.take_descriptor();
    if (!head) break;
    auto& d = rx.descriptors()[*head];
    d.addr = table;
    d.len = o.chain * static_cast<std::uint32_t>(sizeof(virtio::Descriptor));
    d.flags = virtio::Descriptor::kFlagIndirect;
    d.next = 0;
    rx.push_avail_raw(*head);
    ++s.chains_posted;
  }
  rx.notify();
  ++s.kicks;
}

int usage() {
  std::fprintf(
      stderr,
      "usage: xvb-hostile-guest --socket PATH [--attack tx_overlong|tx_oversize|reset_storm]\n"
      "                         [--duration S] [--period-us N] [--chain N]\n"
      "                         [--segment BYTES] [--queue-size N]\n");
  return 2;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--socket") {
      o.socket = v;
    } else if (a == "--attack") {
      bool known = false;
      for (const Attack a : {Attack::kTxOverlong, Attack::kTxOversize, Attack::kResetStorm}) {
        if (std::strcmp(v, attack_name(a)) == 0) {
          o.attack = a;
          known = true;
        }
      }
      if (!known) return false;
    } else if (a == "--duration") {
      o.duration = std::strtod(v, nullptr);
    } else if (a == "--period-us") {
      o.period_us = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (a == "--chain") {
      o.chain = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (a == "--segment") {
      o.segment = static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (a == "--queue-size") {
      o.queue_size = static_cast<std::uint16_t>(std::strtoul(v, nullptr, 10));
    } else {
      return false;
    }
  }
  if (o.chain == 0) o.chain = o.attack == Attack::kTxOversize ? 127 : 256;
  return argc % 2 == 1 && !o.socket.empty() && o.chain >= 2 && o.chain <= 4096 && o.segment > 0;
}

int run(const Options& o) {
  fe::FrontendOptions fo;
  fo.socket_path = o.socket;
  fo.role = fe::Role::kClient;
  fo.memory.size = std::size_t{32} << 20;
  fe::Frontend f(fo);
  if (!f.connect() || !f.negotiate(negotiate_options(o))) {
    std::fprintf(stderr, "xvb-hostile-guest: negotiation failed: %s\n", f.last_error().c_str());
    return 1;
  }
  std::printf("{\"ready\": true}\n");
  std::fflush(stdout);

  Stats s;
  // Guest memory is allocated once (a reset zeroes it but keeps the layout).
  const std::uint64_t buffer = f.tx_queue().allocate_table(o.segment / 16 + 1);
  const std::uint64_t rx_table = f.rx_queue().allocate_table(o.chain);
  const std::uint64_t t0 = now_ns();
  const auto end = t0 + static_cast<std::uint64_t>(o.duration * 1e9);
  std::string last_error;
  while (now_ns() < end) {
    ++s.rounds;
    if (o.attack != Attack::kResetStorm) {
      post_overlong_tx(f, o, buffer, s);
    } else {
      post_empty_rx(f, o, rx_table, s);
      if (f.reset_and_renegotiate()) {
        ++s.resets;
      } else {
        ++s.reset_failures;
        last_error = f.last_error();
        // Connection lost: start over, as QEMU would on reconnect.
        f.disconnect();
        if (!f.connect() || !f.negotiate(negotiate_options(o))) last_error = f.last_error();
      }
    }
    if (!wait_or_stdin_closed(o.period_us)) break;
  }
  for (char& c : last_error)
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = ' ';
  const double secs = static_cast<double>(now_ns() - t0) / 1e9;
  std::printf(
      "{\"attack\": \"%s\", \"seconds\": %.3f, \"rounds\": %llu, \"chains_posted\": %llu, "
      "\"chains_returned\": %llu, \"kicks\": %llu, \"resets\": %llu, \"reset_failures\": %llu, "
      "\"last_error\": \"%s\"}\n",
      attack_name(o.attack), secs, static_cast<unsigned long long>(s.rounds),
      static_cast<unsigned long long>(s.chains_posted),
      static_cast<unsigned long long>(s.chains_returned), static_cast<unsigned long long>(s.kicks),
      static_cast<unsigned long long>(s.resets), static_cast<unsigned long long>(s.reset_failures),
      last_error.c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace xdpvhost::bench

int main(int argc, char** argv) {
  xdpvhost::bench::Options o;
  if (!xdpvhost::bench::parse(argc, argv, o)) return xdpvhost::bench::usage();
  return xdpvhost::bench::run(o);
}

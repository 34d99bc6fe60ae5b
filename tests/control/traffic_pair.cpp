// traffic_pair: two test frontends (tests/frontend) on two ports of a
// running xdpvhostd, exchanging numbered UDP frames in a closed loop — a
// window of frames one way, every one awaited and compared byte for byte,
// then the other way — until stdin is closed. Prints "ready" once both
// devices run and frames flow, and at the end one JSON line:
//   {"rounds":R,"sent":S,"received":N,"lost":L,"corrupt":C,"unexpected":U}
// Used by the port churn test: traffic that must not lose a frame while
// other ports are added and removed.
//
// Usage: traffic_pair SOCK_A MAC_A SOCK_B MAC_B [WINDOW]

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "frontend/frame_builder.hpp"
#include "frontend/frontend.hpp"

using namespace xdpvhost::testing;
using namespace std::chrono_literals;

namespace {

std::optional<MacAddress> parse_mac(const std::string& s) {
  MacAddress m{};
  unsigned v[6];
  if (std::sscanf(s.c_str(), "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
    return std::nullopt;
  for (int i = 0; i < 6; ++i) m[i] = static_cast<std::uint8_t>(v[i]);
  return m;
}

bool stdin_closed() {
  pollfd p{STDIN_FILENO, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  char c;
  return ::read(STDIN_FILENO, &c, 1) <= 0;
}

struct Totals {
  std::uint64_t rounds = 0, sent = 0, received = 0, lost = 0, corrupt = 0, unexpected = 0;
};

std::vector<std::uint8_t> frame(const MacAddress& dst, const MacAddress& src, std::uint32_t seq) {
  UdpFrameSpec spec;
  spec.dst_mac = dst;
  spec.src_mac = src;
  spec.ip_id = static_cast<std::uint16_t>(seq);
  spec.payload = payload_pattern(200 + seq % 800, seq);
  return build_udp(spec);
}

// One window from `tx` to `rx`; every frame is awaited.
void round_trip(Frontend& tx, const MacAddress& tx_mac, Frontend& rx, const MacAddress& rx_mac,
                std::uint32_t& seq, unsigned window, Totals& t) {
  std::vector<std::vector<std::uint8_t>> expected;
  for (unsigned i = 0; i < window; ++i) {
    auto f = frame(rx_mac, tx_mac, seq++);
    if (!tx.send_frame(f)) {
      tx.reclaim_tx();
      if (!tx.send_frame(f)) break;
    }
    expected.push_back(std::move(f));
    ++t.sent;
  }
  std::size_t got = 0;
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (got < expected.size() && std::chrono::steady_clock::now() < deadline) {
    auto frames = rx.receive_frames(200ms, expected.size() - got);
    for (auto& f : frames) {
      if (got >= expected.size()) {
        ++t.unexpected;
        continue;
      }
      if (f.bytes != expected[got]) ++t.corrupt;
      ++got;
      ++t.received;
    }
  }
  t.lost += expected.size() - got;
  tx.reclaim_tx();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::cerr << "usage: traffic_pair SOCK_A MAC_A SOCK_B MAC_B [WINDOW]\n";
    return 2;
  }
  auto mac_a = parse_mac(argv[2]);
  auto mac_b = parse_mac(argv[4]);
  const unsigned window = argc > 5 ? static_cast<unsigned>(std::stoul(argv[5])) : 32;
  if (!mac_a || !mac_b) {
    std::cerr << "traffic_pair: bad MAC\n";
    return 2;
  }
  Frontend a(FrontendOptions{.socket_path = argv[1]});
  Frontend b(FrontendOptions{.socket_path = argv[3]});
  for (Frontend* fe : {&a, &b}) {
    if (!fe->connect() || !fe->negotiate()) {
      std::cerr << "traffic_pair: " << fe->last_error() << "\n";
      return 1;
    }
    fe->post_rx_buffers(128, 2048);
  }
  Totals t;
  std::uint32_t seq = 1;
  // Frames flow once the daemon runs both rings: retry a first frame until then.
  bool flowing = false;
  for (int attempt = 0; attempt < 100 && !flowing; ++attempt) {
    Totals probe;
    round_trip(a, *mac_a, b, *mac_b, seq, 1, probe);
    flowing = probe.received == 1;
    if (!flowing) std::this_thread::sleep_for(50ms);
  }
  if (!flowing) {
    std::cerr << "traffic_pair: no frame got through\n";
    return 1;
  }
  std::cout << "ready" << std::endl;
  while (!stdin_closed()) {
    round_trip(a, *mac_a, b, *mac_b, seq, window, t);
    round_trip(b, *mac_b, a, *mac_a, seq, window, t);
    ++t.rounds;
  }
  std::printf(
      "{\"rounds\":%llu,\"sent\":%llu,\"received\":%llu,\"lost\":%llu,\"corrupt\":%llu,"
      "\"unexpected\":%llu}\n",
      static_cast<unsigned long long>(t.rounds), static_cast<unsigned long long>(t.sent),
      static_cast<unsigned long long>(t.received), static_cast<unsigned long long>(t.lost),
      static_cast<unsigned long long>(t.corrupt), static_cast<unsigned long long>(t.unexpected));
  return 0;
}

#include "guest_traffic.hpp"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <thread>

namespace xdpvhost::integration {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

Bytes numbered_frame(const fe::MacAddress& dst, const fe::MacAddress& src, std::uint32_t seq,
                     std::size_t payload) {
  fe::UdpFrameSpec spec;
  spec.dst_mac = dst;
  spec.src_mac = src;
  spec.src_port = static_cast<std::uint16_t>(1024 + seq % 4096);
  spec.dst_port = 7000;
  spec.ip_id = static_cast<std::uint16_t>(seq);
  spec.payload = fe::payload_pattern(payload, seq);
  return fe::build_udp(spec);
}

std::size_t post_rx(fe::Frontend& g, std::uint32_t size, const fe::RxOptions& options) {
  std::size_t first = 0;
  for (std::uint16_t p = 0; p < g.queue_pairs(); ++p) {
    auto& q = g.rx_queue(p);
    const std::size_t n = g.net(p).post_rx_buffers(q.num_free(), size, options);
    if (p == 0) first = n;
  }
  return first;
}

::testing::AssertionResult send_frames(fe::Frontend& g, const std::vector<Bytes>& frames,
                                       std::uint16_t pair, const fe::TxOptions& options,
                                       const std::optional<virtio::NetHeader>& header,
                                       std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto& net = g.net(pair);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    while (!net.send_frame(frames[i], header, options)) {
      if (Clock::now() >= deadline)
        return ::testing::AssertionFailure()
               << "frame " << i << " of " << frames.size() << " not queued: " << net.last_error();
      // The ring is full: the device must finish chains first.
      if (!net.tx_queue().enable_interrupts()) net.tx_queue().wait_for_interrupt(2ms);
      net.reclaim_tx();
    }
  }
  if (!options.kick) return ::testing::AssertionSuccess();
  net.reclaim_tx();
  return ::testing::AssertionSuccess();
}

std::vector<fe::ReceivedFrame> receive(fe::Frontend& g, std::size_t count,
                                       std::chrono::milliseconds timeout) {
  std::vector<fe::ReceivedFrame> out;
  const auto deadline = Clock::now() + timeout;
  if (g.queue_pairs() == 1) {
    while (out.size() < count && Clock::now() < deadline) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      auto got = g.net(0).receive_frames(left, count - out.size());
      out.insert(out.end(), std::make_move_iterator(got.begin()),
                 std::make_move_iterator(got.end()));
    }
    return out;
  }
  while (out.size() < count) {
    for (std::uint16_t p = 0; p < g.queue_pairs(); ++p) {
      auto got = g.net(p).receive_frames(1ms, 1);
      out.insert(out.end(), std::make_move_iterator(got.begin()),
                 std::make_move_iterator(got.end()));
    }
    if (Clock::now() >= deadline) break;
  }
  return out;
}

std::vector<fe::ReceivedFrame> poll_received(fe::Frontend& g) {
  std::vector<fe::ReceivedFrame> out;
  for (std::uint16_t p = 0; p < g.queue_pairs(); ++p) {
    auto got = g.net(p).poll_frames();
    out.insert(out.end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
  }
  return out;
}

::testing::AssertionResult same_frames(const std::vector<Bytes>& sent,
                                       const std::vector<fe::ReceivedFrame>& got) {
  if (got.size() != sent.size())
    return ::testing::AssertionFailure()
           << "received " << got.size() << " frames, sent " << sent.size();
  for (std::size_t i = 0; i < sent.size(); ++i) {
    if (got[i].bytes != sent[i])
      return ::testing::AssertionFailure() << "frame " << i << " differs: " << got[i].bytes.size()
                                           << " bytes received, " << sent[i].size() << " sent";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_frames_any_order(const std::vector<Bytes>& sent,
                                                 const std::vector<fe::ReceivedFrame>& got) {
  if (got.size() != sent.size())
    return ::testing::AssertionFailure()
           << "received " << got.size() << " frames, sent " << sent.size();
  // Keyed by the bytes as a string: GCC 12 at -O3 warns falsely
  // (stringop-overread) about std::map<std::vector<std::uint8_t>>'s compare.
  auto key = [](const Bytes& b) { return std::string(b.begin(), b.end()); };
  std::unordered_map<std::string, int> want;
  for (const auto& s : sent) ++want[key(s)];
  for (const auto& r : got) {
    auto it = want.find(key(r.bytes));
    if (it == want.end() || it->second == 0)
      return ::testing::AssertionFailure() << "received a frame that was not sent (or twice)";
    --it->second;
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult stream(fe::Frontend& from, fe::Frontend& to,
                                  const std::vector<Bytes>& frames) {
  // In rounds no larger than a receive ring, so no frame finds the
  // receiver without buffers.
  constexpr std::size_t kRound = 64;
  for (std::size_t at = 0; at < frames.size(); at += kRound) {
    const std::vector<Bytes> round(
        frames.begin() + static_cast<std::ptrdiff_t>(at),
        frames.begin() + static_cast<std::ptrdiff_t>(std::min(frames.size(), at + kRound)));
    if (auto r = send_frames(from, round); !r) return r;
    auto got = receive(to, round.size());
    if (auto r = same_frames(round, got); !r) return r << " (round starting at frame " << at << ")";
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult exchange(fe::Frontend& a, const fe::MacAddress& a_mac, fe::Frontend& b,
                                    const fe::MacAddress& b_mac, std::size_t n, std::uint32_t seq,
                                    std::size_t payload) {
  std::vector<Bytes> ab, ba;
  for (std::size_t i = 0; i < n; ++i) {
    ab.push_back(numbered_frame(b_mac, a_mac, seq + static_cast<std::uint32_t>(i), payload));
    ba.push_back(
        numbered_frame(a_mac, b_mac, seq + 100000 + static_cast<std::uint32_t>(i), payload));
  }
  if (auto r = stream(a, b, ab); !r) return r << " (a -> b)";
  if (auto r = stream(b, a, ba); !r) return r << " (b -> a)";
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult tx_drained(fe::Frontend& g, std::uint16_t pair,
                                      std::chrono::milliseconds timeout) {
  if (g.net(pair).wait_tx_complete(timeout)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << g.net(pair).tx_queue().in_flight() << " TX chains still in flight";
}

}  // namespace xdpvhost::integration

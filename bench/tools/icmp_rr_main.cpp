// xvb-icmp-rr: request/response client. Sends ICMP echo requests from a raw
// socket with exactly one outstanding, waits for the matching reply (or a
// timeout, counted as lost) and reports RTT percentiles and transactions/s.
// --interval-us 0 sends the next request as soon as the reply is in
// (back to back); N > 0 starts one request every N us (light load).

#include <arpa/inet.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "frontend/frame_checksum.hpp"
#include "percentiles.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::bench {
namespace {

struct Options {
  in_addr dst{};
  double duration = 1.0;
  unsigned interval_us = 0;
  unsigned payload = 56;
  unsigned timeout_ms = 100;
  unsigned warmup = 100;
};

std::uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

int usage() {
  std::fprintf(stderr,
               "usage: xvb-icmp-rr --dst IP [--duration S] [--interval-us N] [--payload BYTES]\n"
               "                   [--timeout-ms N] [--warmup N]\n");
  return 2;
}

bool parse(int argc, char** argv, Options& o) {
  bool have_dst = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    const char* v = argv[i + 1];
    if (a == "--dst")
      have_dst = inet_pton(AF_INET, v, &o.dst) == 1;
    else if (a == "--duration")
      o.duration = std::strtod(v, nullptr);
    else if (a == "--interval-us")
      o.interval_us = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
    else if (a == "--payload")
      o.payload = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
    else if (a == "--timeout-ms")
      o.timeout_ms = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
    else if (a == "--warmup")
      o.warmup = static_cast<unsigned>(std::strtoul(v, nullptr, 10));
    else
      return false;
  }
  return argc % 2 == 1 && have_dst && o.duration > 0 && o.payload <= 1400 && o.timeout_ms > 0;
}

// Waits for the echo reply with our id and `seq`; false on timeout.
bool await_reply(int fd, std::uint16_t id, std::uint16_t seq, std::uint64_t deadline_ns) {
  std::uint8_t buf[2048];
  for (;;) {
    const std::uint64_t now = now_ns();
    if (now >= deadline_ns) return false;
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;  // EAGAIN: timed out
    }
    if (n < 20) continue;
    const std::size_t ihl = static_cast<std::size_t>(buf[0] & 0x0f) * 4;
    if (static_cast<std::size_t>(n) < ihl + 8) continue;
    const std::uint8_t* icmp = buf + ihl;
    if (icmp[0] != ICMP_ECHOREPLY) continue;
    const auto rid = static_cast<std::uint16_t>(icmp[4] << 8 | icmp[5]);
    const auto rseq = static_cast<std::uint16_t>(icmp[6] << 8 | icmp[7]);
    if (rid == id && rseq == seq) return true;
  }
}

int run(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return usage();
  sys::UniqueFd sock(socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP));
  if (!sock) {
    std::perror("xvb-icmp-rr: socket");
    return 1;
  }
  // ICMP_FILTER (linux/icmp.h, which clashes with glibc's netinet/ip_icmp.h):
  // a bit set per ICMP type the raw socket should not receive.
  constexpr int kIcmpFilter = 1;
  const std::uint32_t filter = ~(1U << ICMP_ECHOREPLY);
  setsockopt(sock.get(), SOL_RAW, kIcmpFilter, &filter, sizeof filter);
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  // recv() waits at most the per-request timeout; await_reply() also checks the deadline.
  timeval tv{static_cast<time_t>(o.timeout_ms / 1000),
             static_cast<suseconds_t>(o.timeout_ms % 1000 * 1000)};
  setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr = o.dst;
  std::vector<std::uint8_t> req(8 + o.payload, 0);
  for (std::size_t i = 8; i < req.size(); ++i) req[i] = static_cast<std::uint8_t>(i);
  const auto id = static_cast<std::uint16_t>(getpid());
  req[0] = ICMP_ECHO;
  req[4] = static_cast<std::uint8_t>(id >> 8);
  req[5] = static_cast<std::uint8_t>(id);

  std::vector<double> rtts;
  rtts.reserve(static_cast<std::size_t>(o.duration * 200000));
  std::uint64_t sent = 0, received = 0, lost = 0, send_errors = 0;
  std::uint16_t seq = 0;
  std::uint64_t start = 0, next = 0;
  const std::uint64_t interval_ns = static_cast<std::uint64_t>(o.interval_us) * 1000;
  const std::uint64_t timeout_ns = static_cast<std::uint64_t>(o.timeout_ms) * 1'000'000;
  std::uint64_t duration_ns = static_cast<std::uint64_t>(o.duration * 1e9);

  for (unsigned i = 0;; ++i) {
    const bool measuring = i >= o.warmup;
    if (i == o.warmup) {
      start = now_ns();
      next = start;
    }
    if (measuring && now_ns() - start >= duration_ns) break;
    if (measuring && interval_ns) {
      timespec ts{static_cast<time_t>(next / 1'000'000'000ULL),
                  static_cast<long>(next % 1'000'000'000ULL)};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
      }
      next += interval_ns;
    }
    ++seq;
    req[6] = static_cast<std::uint8_t>(seq >> 8);
    req[7] = static_cast<std::uint8_t>(seq);
    req[2] = req[3] = 0;
    const std::uint16_t c = testing::internet_checksum(req);
    req[2] = static_cast<std::uint8_t>(c >> 8);
    req[3] = static_cast<std::uint8_t>(c);
    const std::uint64_t t0 = now_ns();
    if (sendto(sock.get(), req.data(), req.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) <
        0) {
      ++send_errors;
      if (measuring) ++sent, ++lost;
      continue;
    }
    const bool ok = await_reply(sock.get(), id, seq, t0 + timeout_ns);
    const std::uint64_t t1 = now_ns();
    if (!measuring) continue;
    ++sent;
    if (ok) {
      ++received;
      rtts.push_back(static_cast<double>(t1 - t0) / 1000.0);
    } else {
      ++lost;
    }
  }
  const double elapsed = static_cast<double>(now_ns() - start) / 1e9;
  std::sort(rtts.begin(), rtts.end());
  double mean = 0;
  for (double r : rtts) mean += r;
  if (!rtts.empty()) mean /= static_cast<double>(rtts.size());
  std::printf(
      "{\"sent\":%llu,\"received\":%llu,\"lost\":%llu,\"send_errors\":%llu,\"elapsed_s\":%.6f,"
      "\"transactions_per_s\":%.1f,\"interval_us\":%u,\"rtt_us\":{\"min\":%.2f,\"p50\":%.2f,"
      "\"p90\":%.2f,"
      "\"p99\":%.2f,\"max\":%.2f,\"mean\":%.2f}}\n",
      static_cast<unsigned long long>(sent), static_cast<unsigned long long>(received),
      static_cast<unsigned long long>(lost), static_cast<unsigned long long>(send_errors), elapsed,
      static_cast<double>(received) / elapsed, o.interval_us, rtts.empty() ? 0.0 : rtts.front(),
      percentile(rtts, 50), percentile(rtts, 90), percentile(rtts, 99),
      rtts.empty() ? 0.0 : rtts.back(), mean);
  return received > 0 ? 0 : 3;
}

}  // namespace
}  // namespace xdpvhost::bench

int main(int argc, char** argv) {
  return xdpvhost::bench::run(argc, argv);
}

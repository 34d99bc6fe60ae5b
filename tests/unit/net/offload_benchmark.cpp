// Microbenchmarks of lib/net's offload code (not a test; run by hand):
//   net_offload_benchmark [--benchmark_filter=...]
// 64 KiB TSO frames cut into 1448-byte segments (software and partial
// checksums), the same from 4 KiB guest pages, and GRO of the segments back.

#include <benchmark/benchmark.h>

#include <vector>

#include "net/gro_table.hpp"
#include "net/gso_segmenter.hpp"
#include "net/internet_checksum.hpp"
#include "net/offload_validation.hpp"
#include "test_packets.hpp"

namespace xdpvhost::net {
namespace {

constexpr std::uint32_t kPayload = 65535 - 20 - 32;  // the largest IPv4 TSO frame
constexpr std::uint16_t kMss = 1448;

struct Fixture {
  Fixture() {
    testing::PacketSpec s;
    s.tcp_options = testing::timestamp_option(1, 2);
    s.csum = testing::L4Checksum::partial;
    s.payload = testing::pattern(kPayload);
    frame = testing::build_frame(s);
    OffloadRequest r;
    r.gso = {GsoType::tcpv4, false, kMss, 66};
    r.csum = {true, 34, 16};
    const ByteSpan span{frame.data(), static_cast<std::uint32_t>(frame.size())};
    offload = validate_offload(ByteSpans(span), r, {}).offload;
    for (std::size_t at = 0; at < frame.size(); at += 4096) {
      const std::size_t n = std::min<std::size_t>(4096, frame.size() - at);
      pages.push_back({frame.data() + at, static_cast<std::uint32_t>(n)});
    }
    umem.assign(offload.segments, std::vector<std::uint8_t>(2048));
  }
  std::vector<std::uint8_t> frame;
  std::vector<ByteSpan> pages;
  ValidatedOffload offload;
  std::vector<std::vector<std::uint8_t>> umem;
};

Fixture& fixture() {
  static Fixture f;
  return f;
}

struct UmemSink {
  std::vector<std::vector<std::uint8_t>>& frames;
  std::uint32_t next = 0;
  std::uint32_t bytes = 0;
  SegmentBuffer next_buffer(std::uint32_t) noexcept { return {frames[next++].data(), 2048}; }
  void commit(const SegmentBuffer&, const SegmentMeta& m) noexcept { bytes += m.len; }
};

void run_segment(benchmark::State& state, ChecksumMode mode, bool scattered) {
  Fixture& f = fixture();
  const ByteSpan whole{f.frame.data(), static_cast<std::uint32_t>(f.frame.size())};
  const ByteSpans frame =
      scattered ? ByteSpans(f.pages.data(), static_cast<std::uint32_t>(f.pages.size()))
                : ByteSpans(whole);
  for (auto _ : state) {
    UmemSink sink{f.umem};
    const SegmentResult r = segment(frame, f.offload, mode, sink);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(sink.bytes);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(f.frame.size()));
  state.counters["segments"] = f.offload.segments;
}

void BM_Segment64KSoftwareChecksum(benchmark::State& s) {
  run_segment(s, ChecksumMode::software, false);
}
void BM_Segment64KPartialChecksum(benchmark::State& s) {
  run_segment(s, ChecksumMode::partial, false);
}
void BM_Segment64KPagesSoftwareChecksum(benchmark::State& s) {
  run_segment(s, ChecksumMode::software, true);
}
BENCHMARK(BM_Segment64KSoftwareChecksum);
BENCHMARK(BM_Segment64KPartialChecksum);
BENCHMARK(BM_Segment64KPagesSoftwareChecksum);

void BM_Checksum1448(benchmark::State& state) {
  const std::vector<std::uint8_t> b = testing::pattern(1448);
  for (auto _ : state) benchmark::DoNotOptimize(checksum_bytes(b.data(), 1448));
  state.SetBytesProcessed(state.iterations() * 1448);
}
BENCHMARK(BM_Checksum1448);

void run_gro(benchmark::State& state, bool verified) {
  Fixture& f = fixture();
  UmemSink seg_sink{f.umem};
  const ByteSpan whole{f.frame.data(), static_cast<std::uint32_t>(f.frame.size())};
  segment(ByteSpans(whole), f.offload, ChecksumMode::software, seg_sink);
  std::vector<std::uint32_t> lens;
  GsoSegmenter probe(ByteSpans(whole), f.offload, ChecksumMode::software);
  while (probe.remaining()) {
    lens.push_back(probe.next_len());
    std::uint8_t scratch[2048];
    SegmentMeta m;
    probe.write_next(scratch, sizeof scratch, m);
  }
  GroTable table;
  std::uint32_t frames = 0;
  auto deliver = [&](const GroFrame& g) noexcept { frames += g.segments; };
  for (auto _ : state) {
    for (std::size_t i = 0; i < lens.size(); ++i)
      table.offer(f.umem[i].data(), lens[i], verified, deliver);
    table.flush(deliver);
  }
  benchmark::DoNotOptimize(frames);
  state.counters["segments"] = static_cast<double>(lens.size());
}
void BM_Gro45SegmentsSoftwareVerify(benchmark::State& s) {
  run_gro(s, false);
}
void BM_Gro45SegmentsDeviceVerified(benchmark::State& s) {
  run_gro(s, true);
}
BENCHMARK(BM_Gro45SegmentsSoftwareVerify);
BENCHMARK(BM_Gro45SegmentsDeviceVerified);

}  // namespace
}  // namespace xdpvhost::net

BENCHMARK_MAIN();

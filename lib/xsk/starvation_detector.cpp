#include "xsk/starvation_detector.hpp"

#include "sys/enum_names.hpp"

namespace xdpvhost::xsk {

namespace {

constexpr sys::EnumNames<StarvationCause, 4> kCauseNames{{
    {StarvationCause::kNone, "none"},
    {StarvationCause::kNoDelivery, "no_delivery"},
    {StarvationCause::kFillRingEmpty, "fill_ring_empty"},
    {StarvationCause::kRxRingFull, "rx_ring_full"},
}};
static_assert(sys::in_enum_order(kCauseNames, 4));

}  // namespace

const char* to_string(StarvationCause cause) {
  return sys::name_of(kCauseNames, cause);
}

StarvationDetector::StarvationDetector(const StarvationConfig& config) : config_(config) {
  if (config_.window_rounds == 0) config_.window_rounds = 1;
  if (config_.windows_to_trip == 0) config_.windows_to_trip = 1;
}

void StarvationDetector::reset() noexcept {
  rounds_ = 0;
  window_rx_ = 0;
  have_baseline_ = false;
  starving_windows_ = 0;
}

StarvationVerdict StarvationDetector::evaluate(const StarvationSample& sample) {
  StarvationVerdict verdict;
  const std::uint64_t rx = window_rx_;
  rounds_ = 0;
  window_rx_ = 0;
  if (!have_baseline_) {
    have_baseline_ = true;
    last_ = sample;
    return verdict;
  }
  // Counters only grow; a smaller value means a new socket: re-baseline.
  auto delta = [](std::uint64_t now, std::uint64_t before) {
    return now >= before ? now - before : 0;
  };
  const std::uint64_t offered = delta(sample.offered, last_.offered);
  const std::uint64_t fill_empty =
      delta(sample.xsk.rx_fill_ring_empty_descs, last_.xsk.rx_fill_ring_empty_descs);
  const std::uint64_t dropped = delta(sample.xsk.rx_dropped, last_.xsk.rx_dropped);
  const std::uint64_t ring_full = delta(sample.xsk.rx_ring_full, last_.xsk.rx_ring_full);
  last_ = sample;

  if (rx == 0) {
    if (fill_empty != 0 || (dropped != 0 && sample.fill_level == 0)) {
      verdict.cause = StarvationCause::kFillRingEmpty;
      verdict.reason = "no RX; kernel found the fill ring empty " + std::to_string(fill_empty) +
                       " times, dropped " + std::to_string(dropped) + " frames";
    } else if (ring_full != 0) {
      verdict.cause = StarvationCause::kRxRingFull;
      verdict.reason = "no RX; RX ring full " + std::to_string(ring_full) + " times";
    } else if (offered >= config_.min_offered) {
      verdict.cause = StarvationCause::kNoDelivery;
      verdict.reason = "no RX while " + std::to_string(offered) +
                       " frames were offered: the socket's queue is not being processed";
    }
  }
  if (verdict.cause == StarvationCause::kNone) {
    starving_windows_ = 0;
    return verdict;
  }
  ++starving_windows_;
  verdict.starving = starving_windows_ >= config_.windows_to_trip;
  verdict.reason += " (" + std::to_string(starving_windows_) + " window" +
                    (starving_windows_ == 1 ? "" : "s") + " in a row)";
  return verdict;
}

}  // namespace xdpvhost::xsk

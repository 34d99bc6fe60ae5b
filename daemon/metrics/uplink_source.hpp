#pragma once
// The daemon's uplinks as UplinkMetrics: per queue the queue port's counters,
// the socket's XDP_STATISTICS and its binding (bind mode, napi id, thread),
// per uplink the link state and the XDP program's counters. Reads what the
// uplink objects expose (relaxed atomics, the program's stats map) on the
// control thread.

#include <vector>

#include "runtime/daemon.hpp"
#include "uplink_metrics.hpp"

namespace xdpvhost::daemon::metrics {

std::vector<UplinkMetrics> collect_uplink_metrics(const Daemon& daemon);

}  // namespace xdpvhost::daemon::metrics

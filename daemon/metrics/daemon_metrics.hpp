#pragma once
// The daemon's own metrics: build info, start time, every guest port
// (packets, bytes, drops by reason, kicks, interrupts, queue errors, state)
// and every service thread (iterations with and without work, sleeps,
// wakeups, state, burst-size histogram). Read from the datapath's counters
// (relaxed atomics, no locks) on the control thread.

#include "daemon.hpp"
#include "prometheus_text.hpp"

namespace xdpvhost::daemon::metrics {

void write_build_metrics(PrometheusText& out, const Daemon& daemon);
void write_port_metrics(PrometheusText& out, const Daemon& daemon);
void write_thread_metrics(PrometheusText& out, Daemon& daemon);

}  // namespace xdpvhost::daemon::metrics

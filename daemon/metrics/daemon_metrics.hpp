#pragma once
// The daemon's own metric families: build info, start time, every guest port
// (packets, bytes, drops by reason, kicks, interrupts, queue errors, state)
// and every service thread (iterations with and without work, sleeps,
// wakeups, state, burst-size histogram), as prometheus-cpp MetricFamily
// values (family_builder.hpp). Read from the datapath's counters (relaxed
// atomics, no locks) on the control thread.

#include "runtime/daemon.hpp"
#include "counter_families.hpp"

namespace xdpvhost::daemon::metrics {

void add_build_families(Families& out, const Daemon& daemon);
// Breakdowns (drops, refusals by reason; packets by queue pair) as `listed`.
void add_port_families(Families& out, const Daemon& daemon, Breakdowns listed);
void add_thread_families(Families& out, Daemon& daemon);

}  // namespace xdpvhost::daemon::metrics

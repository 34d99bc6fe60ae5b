#pragma once
// The human rendering of stats.get: ports, uplink queues and service
// threads as tables. Given the previous sample and the seconds between the
// two (stats --watch), packet columns get per-second rates.

#include <nlohmann/json.hpp>
#include <ostream>

namespace xdpvhost::ctl {

void print_stats(const nlohmann::json& stats, const nlohmann::json& previous, double seconds,
                 std::ostream& out);
void print_stats_reset(const nlohmann::json& reset, std::ostream& out);

}  // namespace xdpvhost::ctl

#pragma once
// Runs a command line with /bin/sh for the uplink tests (ip, ethtool, bridge).

#include <string>

namespace xdpvhost::uplink_test {

// Exit status of `command` (-1 if it did not exit normally); stdout and
// stderr together go to `output` when given.
int run(const std::string& command, std::string* output = nullptr);

}  // namespace xdpvhost::uplink_test

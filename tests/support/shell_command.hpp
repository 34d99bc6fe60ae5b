#pragma once
// Runs a command line with /bin/sh for the tests that set up networks and
// processes (ip, ethtool, bridge, rm).

#include <string>

namespace xdpvhost::test_support {

// Exit status of `command` (-1 if it did not exit normally); stdout and
// stderr together go to `output` when given.
int run_shell(const std::string& command, std::string* output = nullptr);

}  // namespace xdpvhost::test_support

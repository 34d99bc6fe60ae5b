#pragma once
// A DPDK 22.11 dpdk-testpmd guest: net_virtio_user on a daemon port socket,
// non-interactive, one forwarding core. Stopped by closing its stdin, after
// which it prints its forward statistics, which stop() returns.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frontend/testpmd_process.hpp"

namespace xdpvhost::uplink_test {

struct TestpmdCounters {
  bool valid = false;  // the final statistics were found
  std::uint64_t rx = 0, rx_dropped = 0, tx = 0, tx_dropped = 0;
};

class TestpmdGuest {
 public:
  struct Options {
    std::string name;        // unique per test: --file-prefix xvu-<pid>-<name>
    std::string socket;      // the daemon port's socket (daemon in server mode)
    std::string mac;         // the guest's MAC
    std::string mode;        // icmpecho, rxonly, txonly, ...
    std::string workdir;     // the log goes here
    std::vector<std::string> app_args;  // after "--": --eth-peer, --tx-ip, --txpkts, ...
  };

  explicit TestpmdGuest(Options options);
  ~TestpmdGuest();

  // Starts it and waits until forwarding runs.
  bool start(std::string& error);
  // Stops it and returns its final port statistics.
  TestpmdCounters stop();
  std::string log() const;

 private:
  Options options_;
  std::string prefix_;
  std::unique_ptr<testing::TestpmdProcess> process_;
};

}  // namespace xdpvhost::uplink_test

#pragma once
// A DPDK 22.11 dpdk-testpmd guest: net_virtio_user on a daemon port socket,
// interactive on a pipe (--auto-start), one forwarding core, output to a log.
// stop_forwarding() sends "stop": forwarding ends but the port stays up, so
// frames testpmd already put on its TX ring are still taken by the daemon --
// counts can then be compared exactly. quit() ends it. It dies with the test
// process (PDEATHSIG) and, at the latest, with this object.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "sys/unique_fd.hpp"

namespace xdpvhost::uplink_test {

struct TestpmdCounters {
  bool valid = false;  // the statistics were found
  std::uint64_t rx = 0, rx_dropped = 0, tx = 0, tx_dropped = 0;
  std::uint64_t rx_nombuf = 0;  // port statistics only: RX refills that found no mbuf
};

class TestpmdGuest {
 public:
  struct Options {
    std::string name;                   // unique per test: --file-prefix xvu-<pid>-<name>
    std::string socket;                 // the daemon port's socket (daemon in server mode)
    std::string mac;                    // the guest's MAC
    std::string mode;                   // icmpecho, rxonly, txonly, ...
    std::string workdir;                // the log goes here
    std::vector<std::string> app_args;  // after "--": --eth-peer, --tx-ip, --txpkts, ...
  };

  explicit TestpmdGuest(Options options);
  ~TestpmdGuest();
  TestpmdGuest(const TestpmdGuest&) = delete;
  TestpmdGuest& operator=(const TestpmdGuest&) = delete;

  // Starts it and waits until forwarding runs.
  bool start(std::string& error);
  // "stop": the forward statistics of the run (RX/TX packets of port 0).
  TestpmdCounters stop_forwarding();
  // "show port stats 0" (while forwarding): rx, tx, rx_nombuf of the port.
  TestpmdCounters port_stats();
  // "quit", then SIGKILL if it does not exit.
  void quit();
  std::string log() const;

 private:
  bool running();
  bool wait_for_log(const std::string& text, std::size_t from, std::chrono::milliseconds timeout);
  bool command(const std::string& line);

  Options options_;
  std::string prefix_;
  std::string log_path_;
  pid_t pid_ = -1;
  sys::UniqueFd stdin_;
};

}  // namespace xdpvhost::uplink_test

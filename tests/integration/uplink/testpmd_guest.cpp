#include "testpmd_guest.hpp"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>

#include "shell_command.hpp"

namespace xdpvhost::uplink_test {

TestpmdGuest::TestpmdGuest(Options options)
    : options_(std::move(options)),
      prefix_("xvu-" + std::to_string(::getpid()) + "-" + options_.name) {}

TestpmdGuest::~TestpmdGuest() {
  if (process_) process_->stop(std::chrono::milliseconds(3000));
  run("rm -rf /var/run/dpdk/" + prefix_);
}

bool TestpmdGuest::start(std::string& error) {
  std::vector<std::string> argv{
      "dpdk-testpmd", "--no-pci", "--no-huge", "-m", "512", "--file-prefix=" + prefix_, "-l", "0,1",
      "--main-lcore=0", "--log-level=lib.eal:error",
      "--vdev=net_virtio_user0,path=" + options_.socket + ",queue_size=1024,mac=" + options_.mac,
      "--", "--forward-mode=" + options_.mode, "--nb-cores=1", "--total-num-mbufs=8192"};
  argv.insert(argv.end(), options_.app_args.begin(), options_.app_args.end());
  process_ = std::make_unique<testing::TestpmdProcess>(
      argv, options_.workdir + "/testpmd-" + options_.name + ".log");
  if (!process_->wait_for_log("Press enter to exit", std::chrono::seconds(60))) {
    error = "testpmd " + options_.name + " did not start forwarding:\n" + log();
    return false;
  }
  return true;
}

TestpmdCounters TestpmdGuest::stop() {
  TestpmdCounters c;
  if (!process_) return c;
  process_->stop(std::chrono::milliseconds(20000));
  const std::string text = log();
  const std::size_t at = text.rfind("Forward statistics for port 0");
  if (at == std::string::npos) return c;
  const std::string block = text.substr(at);
  std::smatch m;
  static const std::regex rx(R"(RX-packets:\s*(\d+)\s+RX-dropped:\s*(\d+))");
  static const std::regex tx(R"(TX-packets:\s*(\d+)\s+TX-dropped:\s*(\d+))");
  if (!std::regex_search(block, m, rx)) return c;
  c.rx = std::stoull(m[1]);
  c.rx_dropped = std::stoull(m[2]);
  if (!std::regex_search(block, m, tx)) return c;
  c.tx = std::stoull(m[1]);
  c.tx_dropped = std::stoull(m[2]);
  c.valid = true;
  return c;
}

std::string TestpmdGuest::log() const {
  return process_ ? process_->log() : std::string{};
}

}  // namespace xdpvhost::uplink_test

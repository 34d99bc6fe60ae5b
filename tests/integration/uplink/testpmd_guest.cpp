#include "testpmd_guest.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "support/shell_command.hpp"

namespace xdpvhost::uplink_test {

using test_support::run_shell;

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

TestpmdGuest::TestpmdGuest(Options options)
    : options_(std::move(options)),
      prefix_("xvu-" + std::to_string(::getpid()) + "-" + options_.name),
      log_path_(options_.workdir + "/testpmd-" + options_.name + ".log") {}

TestpmdGuest::~TestpmdGuest() {
  quit();
  run_shell("rm -rf /var/run/dpdk/" + prefix_);
}

bool TestpmdGuest::start(std::string& error) {
  // stdbuf: testpmd's stdout is a file; its statistics would sit in a buffer.
  std::vector<std::string> args{
      "stdbuf",
      "-oL",
      "dpdk-testpmd",
      "--no-pci",
      "--no-huge",
      "-m",
      "512",
      "--file-prefix=" + prefix_,
      "-l",
      "0,1",
      "--main-lcore=0",
      "--log-level=lib.eal:error",
      "--vdev=net_virtio_user0,path=" + options_.socket + ",queue_size=1024,mac=" + options_.mac,
      "--",
      "-i",
      "--auto-start",
      "--forward-mode=" + options_.mode,
      "--nb-cores=1",
      "--total-num-mbufs=8192"};
  args.insert(args.end(), options_.app_args.begin(), options_.app_args.end());
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) {
    error = "pipe failed";
    return false;
  }
  const int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    error = "cannot open " + log_path_;
    return false;
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::setpgid(0, 0);
    ::dup2(pipefd[0], 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(pipefd[0]);
  ::close(log_fd);
  stdin_.reset(pipefd[1]);
  if (pid_ < 0) {
    error = "fork failed";
    return false;
  }
  if (!wait_for_log("Start automatic packet forwarding", 0, 60s) ||
      !wait_for_log("testpmd> ", 0, 10s)) {
    error = "testpmd " + options_.name + " did not start forwarding:\n" + log();
    return false;
  }
  return true;
}

bool TestpmdGuest::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

bool TestpmdGuest::wait_for_log(const std::string& text, std::size_t from,
                                std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const std::string l = log();
    if (l.size() > from && l.find(text, from) != std::string::npos) return true;
    if (!running() || Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
}

bool TestpmdGuest::command(const std::string& line) {
  if (!stdin_) return false;
  const std::string text = line + "\n";
  return ::write(stdin_.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

TestpmdCounters TestpmdGuest::stop_forwarding() {
  TestpmdCounters c;
  const std::size_t from = log().size();
  if (!command("stop") || !wait_for_log("Done.", from, 20s)) return c;
  const std::string text = log().substr(from);
  const std::size_t at = text.find("Forward statistics for port 0");
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

TestpmdCounters TestpmdGuest::port_stats() {
  TestpmdCounters c;
  const std::size_t from = log().size();
  if (!command("show port stats 0") || !wait_for_log("Tx-bps", from, 10s)) return c;
  const std::string text = log().substr(from);
  std::smatch m;
  static const std::regex rx(R"(RX-packets:\s*(\d+))");
  static const std::regex tx(R"(TX-packets:\s*(\d+))");
  static const std::regex nombuf(R"(RX-nombuf:\s*(\d+))");
  if (!std::regex_search(text, m, rx)) return c;
  c.rx = std::stoull(m[1]);
  if (!std::regex_search(text, m, tx)) return c;
  c.tx = std::stoull(m[1]);
  if (std::regex_search(text, m, nombuf)) c.rx_nombuf = std::stoull(m[1]);
  c.valid = true;
  return c;
}

void TestpmdGuest::quit() {
  if (pid_ <= 0) return;
  command("quit");
  stdin_.reset();
  const auto deadline = Clock::now() + 20s;
  while (running() && Clock::now() < deadline) std::this_thread::sleep_for(20ms);
  if (running()) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
}

std::string TestpmdGuest::log() const {
  std::ifstream f(log_path_);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace xdpvhost::uplink_test

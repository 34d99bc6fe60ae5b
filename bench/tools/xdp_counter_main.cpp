// xvb-xdpcount: attaches xdp_count.bpf.o to one interface and answers
// commands on stdin, one per line, with one JSON line on stdout:
//   read  -> {"t_ns":CLOCK_MONOTONIC,"packets":N,"bytes":N}  (sums over CPUs)
//   drop  -> frames are counted and dropped (the default)
//   pass  -> frames are counted and passed to the stack
//   quit (or EOF, SIGINT, SIGTERM) -> detach and exit 0
// The first line is {"ready":true,"mode":"native"|"skb"} once attached.

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sys/unique_fd.hpp"
#include "xdp_count_abi.h"

namespace xdpvhost::bench {
namespace {

struct ObjectCloser {
  void operator()(bpf_object* o) const noexcept { bpf_object__close(o); }
};
using BpfObject = std::unique_ptr<bpf_object, ObjectCloser>;

// Detaches the program from the interface when it goes out of scope.
class XdpAttachment {
 public:
  XdpAttachment(int ifindex, std::uint32_t flags) : ifindex_(ifindex), flags_(flags) {}
  XdpAttachment(const XdpAttachment&) = delete;
  XdpAttachment& operator=(const XdpAttachment&) = delete;
  ~XdpAttachment() { bpf_xdp_detach(ifindex_, flags_, nullptr); }

 private:
  int ifindex_;
  std::uint32_t flags_;
};

std::uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t sum_slot(int map_fd, std::uint32_t slot, int cpus) {
  std::vector<std::uint64_t> values(static_cast<std::size_t>(cpus), 0);
  if (bpf_map_lookup_elem(map_fd, &slot, values.data()) != 0) return 0;
  std::uint64_t sum = 0;
  for (auto v : values) sum += v;
  return sum;
}

int usage() {
  std::fprintf(stderr, "usage: xvb-xdpcount --ifname IF --object xdp_count.bpf.o [--skb]\n");
  return 2;
}

int run(int argc, char** argv) {
  std::string ifname, object_path;
  bool skb_only = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--ifname" && i + 1 < argc)
      ifname = argv[++i];
    else if (a == "--object" && i + 1 < argc)
      object_path = argv[++i];
    else if (a == "--skb")
      skb_only = true;
    else
      return usage();
  }
  if (ifname.empty() || object_path.empty()) return usage();
  const int ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (ifindex == 0) {
    std::fprintf(stderr, "xvb-xdpcount: no interface %s: %s\n", ifname.c_str(),
                 std::strerror(errno));
    return 1;
  }

  BpfObject object(bpf_object__open_file(object_path.c_str(), nullptr));
  if (!object) {
    std::fprintf(stderr, "xvb-xdpcount: cannot open %s: %s\n", object_path.c_str(),
                 std::strerror(errno));
    return 1;
  }
  if (int err = bpf_object__load(object.get()); err != 0) {
    std::fprintf(stderr, "xvb-xdpcount: load failed: %s\n", std::strerror(-err));
    return 1;
  }
  bpf_program* prog = bpf_object__find_program_by_name(object.get(), "xvb_count");
  const int counts_fd = bpf_object__find_map_fd_by_name(object.get(), "xvb_counts");
  const int config_fd = bpf_object__find_map_fd_by_name(object.get(), "xvb_config");
  if (!prog || counts_fd < 0 || config_fd < 0) {
    std::fprintf(stderr, "xvb-xdpcount: program or maps missing in %s\n", object_path.c_str());
    return 1;
  }
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return 1;

  std::uint32_t flags = XDP_FLAGS_DRV_MODE;
  const char* mode = "native";
  int err = skb_only ? -EOPNOTSUPP : bpf_xdp_attach(ifindex, bpf_program__fd(prog), flags, nullptr);
  if (err != 0) {
    flags = XDP_FLAGS_SKB_MODE;
    mode = "skb";
    err = bpf_xdp_attach(ifindex, bpf_program__fd(prog), flags, nullptr);
  }
  if (err != 0) {
    std::fprintf(stderr, "xvb-xdpcount: attach to %s failed: %s\n", ifname.c_str(),
                 std::strerror(-err));
    return 1;
  }
  XdpAttachment attachment(ifindex, flags);

  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  sys::UniqueFd signals(signalfd(-1, &mask, SFD_CLOEXEC));
  if (!signals) return 1;

  std::printf("{\"ready\":true,\"mode\":\"%s\"}\n", mode);
  std::fflush(stdout);

  std::string line;
  char buf[256];
  for (;;) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {signals.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (fds[1].revents & POLLIN) return 0;
    if (!(fds[0].revents & (POLLIN | POLLHUP))) continue;
    const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n <= 0) return 0;
    line.append(buf, static_cast<std::size_t>(n));
    for (std::size_t nl; (nl = line.find('\n')) != std::string::npos;) {
      const std::string cmd = line.substr(0, nl);
      line.erase(0, nl + 1);
      if (cmd == "read") {
        const std::uint64_t t = monotonic_ns();
        const std::uint64_t packets = sum_slot(counts_fd, XVB_COUNT_PACKETS, cpus);
        const std::uint64_t bytes = sum_slot(counts_fd, XVB_COUNT_BYTES, cpus);
        std::printf("{\"t_ns\":%llu,\"packets\":%llu,\"bytes\":%llu}\n",
                    static_cast<unsigned long long>(t), static_cast<unsigned long long>(packets),
                    static_cast<unsigned long long>(bytes));
      } else if (cmd == "drop" || cmd == "pass") {
        const std::uint32_t zero = 0;
        const std::uint32_t action = cmd == "pass" ? XVB_ACTION_PASS : XVB_ACTION_DROP;
        const int rc = bpf_map_update_elem(config_fd, &zero, &action, BPF_ANY);
        std::printf("{\"action\":\"%s\",\"ok\":%s}\n", cmd.c_str(), rc == 0 ? "true" : "false");
      } else if (cmd == "quit") {
        return 0;
      } else {
        std::printf("{\"error\":\"unknown command\"}\n");
      }
      std::fflush(stdout);
    }
  }
}

}  // namespace
}  // namespace xdpvhost::bench

int main(int argc, char** argv) {
  return xdpvhost::bench::run(argc, argv);
}

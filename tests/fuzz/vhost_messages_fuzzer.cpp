// Fuzz target: arbitrary bytes as a sequence of vhost-user messages -- with
// eventfds and memfds passed along as the bytes ask -- framed through a real
// vhost::Connection into two vhost::Devices whose rings are served by real
// dataplane::GuestPorts on an in-process Dataplane (one service thread). The
// two ports switch frames to each other, so whatever rings the messages set
// up in the memfds are walked on transmit and on receive.
//
// Input, repeated until it runs out (at most kMaxSteps steps):
//   op:u8            bit 7: device 1 instead of 0; op % 4 == 3: datapath step,
//                    else one message:
//   request:u8 flags:u8 len:u8 [len16:u16 if len == 255] payload[len]
//   [size:u16 if flags & 0x20: the header's size field lies]
//   fds:u8           count = (fds & 7) + (fds & 0x80 ? 8 : 0); 9 and more are too many
//   per fd: kind:u8  odd: memfd of ((kind >> 1) + 1) pages, then len:u16 and
//                    len bytes of content (what fits is written); even: an eventfd
//   flags byte: 0x08 need_reply; (flags & 0xc0) == 0xc0: version = flags & 3
//   datapath step: off:u32 n:u8 bytes[n] written into the device's last memfd
//                  at off, then every eventfd passed so far is signalled (kicks)
//                  and the service thread runs a few rounds.
//
//   fds byte bit 6:  the memory table goes out as it is (see below)
//
// Memory tables: by default this target makes each region fit the memfd it
// comes with (grows the memfd to what the table claims, as QEMU's memory
// always covers its table, and clamps claims beyond kMaxMemfdBytes), so that
// mutations of a table keep reaching the rings. A SET_MEM_TABLE whose fds
// byte has bit 6 set is sent as it is: a region larger than its fd, which
// once killed the datapath with SIGBUS and is now refused by
// GuestMemory::map() (integration suite MemoryTable.*; seed
// region_beyond_its_memfd). XDPVHOST_FUZZ_INCONSISTENT_TABLES=1 in the
// environment sends every table as it is.

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/dataplane.hpp"
#include "dataplane/guest_port.hpp"
#include "fuzz_bytes.hpp"
#include "sys/unique_fd.hpp"
#include "vhost/connection.hpp"
#include "vhost/device.hpp"
#include "vhost/protocol.hpp"

namespace {

using namespace xdpvhost;
using fuzz::FuzzBytes;

bool keep_tables_consistent() {
  static const bool keep = std::getenv("XDPVHOST_FUZZ_INCONSISTENT_TABLES") == nullptr;
  return keep;
}
constexpr std::uint64_t kMaxMemfdBytes = 64ull << 20;
constexpr int kMaxSteps = 96;
constexpr std::size_t kMaxFds = 16;

// Runs each ring start/stop on the port's service thread, as
// GuestPortController does for the daemon.
class PortBackend final : public vhost::DeviceBackend {
 public:
  PortBackend(dataplane::ServiceThread& thread, dataplane::GuestPort& port)
      : thread_(thread), port_(port) {}
  void start_queue(vhost::QueueStart start) override {
    thread_.call([&] {
      port_.start_queue(std::move(start));
      thread_.wait_fds_changed();
    });
  }
  std::optional<std::uint16_t> stop_queue(std::uint32_t vring, vhost::RingStop why) override {
    return thread_.call([&]() -> std::optional<std::uint16_t> {
      const std::uint16_t base = port_.stop_queue(vring, why);
      thread_.wait_fds_changed();
      return base;
    });
  }
  void set_mtu(std::uint32_t mtu) override {
    thread_.call([&] { port_.set_mtu(mtu); });
  }

 private:
  dataplane::ServiceThread& thread_;
  dataplane::GuestPort& port_;
};

net::MacAddress mac(std::uint8_t last) {
  net::MacAddress m;
  m.bytes = {0x02, 0, 0, 0, 0, last};
  return m;
}

dataplane::Dataplane::Options dataplane_options() {
  dataplane::Dataplane::Options o;
  o.threads = 1;
  o.tunables.busy_poll_us = 0;
  return o;
}

struct World {
  dataplane::Dataplane dp{dataplane_options()};
  std::array<std::unique_ptr<dataplane::GuestPort>, 2> ports;
  std::array<std::unique_ptr<PortBackend>, 2> backends;

  World() {
    spdlog::set_level(spdlog::level::off);
    for (std::uint8_t i = 0; i < 2; ++i) {
      const net::MacAddress m = mac(static_cast<std::uint8_t>(i + 1));
      ports[i] = std::make_unique<dataplane::GuestPort>(
          dp.allocate_port_id(), std::string("fuzz").append(std::to_string(i)),
          dataplane::Port::kNoUplinkId,
          dataplane::GuestPort::Options{1500, {}, dataplane::MacPolicy::kFixed, m});
      dp.attach(*ports[i], 0, m);
      backends[i] = std::make_unique<PortBackend>(dp.thread(0), *ports[i]);
    }
  }
  ~World() {
    for (auto& p : ports) dp.detach(*p);
  }
  void sync() {
    for (int i = 0; i < 3; ++i) dp.thread(0).call([] {});
  }
};

World& world() {
  static World w;
  return w;
}

// One frontend connection: our end of a socketpair, the daemon's Connection
// on the other, and the device it feeds.
struct Link {
  std::unique_ptr<vhost::Device> device;
  std::unique_ptr<vhost::Connection> connection;
  sys::UniqueFd ours;
  std::vector<sys::UniqueFd> eventfds;  // the frontend keeps what it passed
  std::vector<sys::UniqueFd> memfds;

  void open() {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
    connection = std::make_unique<vhost::Connection>(sys::UniqueFd(sv[0]));
    ours.reset(sv[1]);
  }
  void reconnect() {
    device->disconnect();
    open();
  }
  // Everything the backend sent back (replies) is read and dropped.
  void drain_replies() {
    char buf[4096];
    while (::recv(ours.get(), buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
  }
  // The SocketEndpoint loop: read, handle, reply.
  void pump() {
    vhost::Message message;
    for (;;) {
      std::string error;
      const auto status = connection->read(message, error);
      if (status == vhost::Connection::ReadStatus::kWouldBlock) break;
      if (status != vhost::Connection::ReadStatus::kMessage) {
        reconnect();
        return;
      }
      const bool ack = device->reply_ack_negotiated();  // as SocketEndpoint: before handling
      vhost::Outcome outcome = device->handle(message);
      if (outcome.disconnect || !connection->reply(message, outcome, ack, error)) {
        reconnect();
        return;
      }
      message.fds.clear();
      drain_replies();
    }
    drain_replies();
  }
};

sys::UniqueFd make_memfd(std::size_t bytes, std::span<const std::uint8_t> content) {
  sys::UniqueFd fd(::memfd_create("fuzz-guest", MFD_CLOEXEC));
  if (!fd.valid() || ::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) return {};
  if (!content.empty()) {
    [[maybe_unused]] auto n = ::pwrite(fd.get(), content.data(), content.size(), 0);
  }
  return fd;
}

std::uint64_t fd_size(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

// Makes each region of a SET_MEM_TABLE payload fit the memfd it comes with.
void keep_table_consistent(std::vector<std::uint8_t>& payload, const std::vector<int>& fds,
                           const std::vector<bool>& is_memfd) {
  if (payload.size() < sizeof(vhost::MemoryTableHeader)) return;
  vhost::MemoryTableHeader head;
  std::memcpy(&head, payload.data(), sizeof head);
  for (std::size_t i = 0; i < head.nregions && i < fds.size(); ++i) {
    const std::size_t at = sizeof head + i * sizeof(vhost::MemoryRegionDesc);
    if (at + sizeof(vhost::MemoryRegionDesc) > payload.size()) break;
    if (!is_memfd[i]) continue;
    vhost::MemoryRegionDesc r;
    std::memcpy(&r, payload.data() + at, sizeof r);
    const std::uint64_t end = r.mmap_offset + r.memory_size;
    if (end >= r.mmap_offset && end <= kMaxMemfdBytes) {
      if (fd_size(fds[i]) < end && ::ftruncate(fds[i], static_cast<off_t>(end)) != 0)
        r.memory_size = 0;
    } else {
      const std::uint64_t have = fd_size(fds[i]);
      r.memory_size = r.mmap_offset < have ? have - r.mmap_offset : 0;
    }
    std::memcpy(payload.data() + at, &r, sizeof r);
  }
}

void send_message(Link& link, FuzzBytes& in) {
  const std::uint8_t request = in.u8();
  const std::uint8_t fl = in.u8();
  std::uint32_t flags = (fl & 0xc0) == 0xc0 ? (fl & 3u) : vhost::MessageHeader::kVersion;
  if (fl & 0x08) flags |= vhost::MessageHeader::kFlagNeedReply;
  std::size_t len = in.u8();
  if (len == 255) len = in.u16() % 8192;
  const auto bytes = in.take(len);
  std::vector<std::uint8_t> payload(bytes.begin(), bytes.end());
  const std::uint32_t size_field =
      (fl & 0x20) ? in.u16() : static_cast<std::uint32_t>(payload.size());

  const std::uint8_t fd_spec = in.u8();
  std::size_t nfds = fd_spec & 7u;
  if (fd_spec & 0x80) nfds += 8;
  nfds = std::min(nfds, kMaxFds);
  std::vector<int> fds;
  std::vector<bool> is_memfd;
  for (std::size_t i = 0; i < nfds; ++i) {
    const std::uint8_t kind = in.u8();
    if (kind & 1) {
      const std::size_t pages = (kind >> 1) + 1u;
      const auto content = in.take(in.u16());  // consumed whole, so the page count can change alone
      auto fd = make_memfd(pages * 4096, content.first(std::min(content.size(), pages * 4096)));
      if (!fd.valid()) continue;
      fds.push_back(fd.get());
      is_memfd.push_back(true);
      link.memfds.push_back(std::move(fd));
    } else {
      sys::UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
      if (!fd.valid()) continue;
      fds.push_back(fd.get());
      is_memfd.push_back(false);
      link.eventfds.push_back(std::move(fd));
    }
  }
  const bool as_sent = (fd_spec & 0x40) != 0;
  if (!as_sent && keep_tables_consistent() &&
      request == static_cast<std::uint8_t>(vhost::Request::kSetMemTable))
    keep_table_consistent(payload, fds, is_memfd);

  std::vector<std::uint8_t> wire(sizeof(vhost::MessageHeader) + payload.size());
  const vhost::MessageHeader header{request, flags, size_field};
  std::memcpy(wire.data(), &header, sizeof header);
  if (!payload.empty()) std::memcpy(wire.data() + sizeof header, payload.data(), payload.size());
  iovec iov{wire.data(), wire.size()};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * std::max<std::size_t>(fds.size(), 1)));
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  if (::sendmsg(link.ours.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
    link.reconnect();  // the backend stopped reading (a lying size): start over
    return;
  }
  link.pump();
}

void datapath_step(Link& link, FuzzBytes& in) {
  const std::uint32_t off = in.u32();
  const auto bytes = in.take(in.u8());
  if (!link.memfds.empty() && !bytes.empty()) {
    const int fd = link.memfds.back().get();
    const std::uint64_t size = fd_size(fd);
    if (size > 0) {
      [[maybe_unused]] auto n =
          ::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(off % size));
    }
  }
  const std::uint64_t one = 1;
  for (const auto& e : link.eventfds) {
    [[maybe_unused]] auto n = ::write(e.get(), &one, sizeof one);
  }
}

// What an input did (XDPVHOST_FUZZ_REPORT=1): to check that seeds reach the
// datapath.
void report(World& w, const std::array<Link, 2>& links) {
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& c = w.ports[i]->counters();
    std::fprintf(
        stderr,
        "  port %zu: features 0x%llx rx %llu tx %llu interrupts %llu queue_errors %llu drops", i,
        static_cast<unsigned long long>(links[i].device->acked_features()),
        static_cast<unsigned long long>(c.rx_packets.get()),
        static_cast<unsigned long long>(c.tx_packets.get()),
        static_cast<unsigned long long>(c.interrupts.get()),
        static_cast<unsigned long long>(c.queue_errors.get()));
    for (std::size_t r = 0; r < c.drops.size(); ++r)
      if (c.drops[r].get() != 0)
        std::fprintf(stderr, " %s=%llu",
                     dataplane::to_string(static_cast<dataplane::DropReason>(r)),
                     static_cast<unsigned long long>(c.drops[r].get()));
    std::fprintf(stderr, "; vrings");
    for (std::uint32_t v = 0; v < links[i].device->vring_count(); ++v)
      std::fprintf(stderr, " %u:%s", v,
                   links[i].device->vrings()[v].running
                       ? (w.ports[i]->queue_state(v) == dataplane::GuestPort::QueueState::kBroken
                              ? "broken"
                              : "running")
                       : "stopped");
    std::fprintf(stderr, "\n");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  World& w = world();
  FuzzBytes in(data, size);
  const std::uint8_t setup = in.u8();
  std::array<Link, 2> links;
  for (std::size_t i = 0; i < 2; ++i) {
    vhost::DeviceOptions options;
    options.queue_pairs = 1 + ((setup >> i) & 1u);
    options.offer_csum = ((setup >> (i + 2)) & 1u) == 0;
    links[i].device = std::make_unique<vhost::Device>(options, *w.backends[i]);
    links[i].open();
  }
  for (int step = 0; step < kMaxSteps && !in.empty(); ++step) {
    const std::uint8_t op = in.u8();
    Link& link = links[op >> 7];
    if ((op & 3) == 3) {
      datapath_step(link, in);
      w.sync();
    } else {
      send_message(link, in);
    }
  }
  w.sync();
  if (std::getenv("XDPVHOST_FUZZ_REPORT") != nullptr) report(w, links);
  // The frontends go away: every ring stops before its memory is unmapped.
  for (auto& link : links) link.device->disconnect();
  w.sync();
  return 0;
}

#include "nic/rtnl_socket.hpp"

#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <vector>

namespace xdpvhost::nic {

namespace {
// Large enough for a dump datagram (libmnl 1.0.5's kDumpBufferSize).
constexpr std::size_t kDumpBufferSize = 32768;
}  // namespace

std::unique_ptr<RtnlSocket> RtnlSocket::open(unsigned groups, bool nonblocking,
                                             std::string& error) {
  std::unique_ptr<RtnlSocket> self(new RtnlSocket());
  self->nl_ = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0));
  if (self->nl_ == nullptr) {
    error = std::string("rtnetlink: socket: ") + std::strerror(errno);
    return nullptr;
  }
  if (mnl_socket_bind(self->nl_, groups, MNL_SOCKET_AUTOPID) < 0) {
    error = std::string("rtnetlink: bind: ") + std::strerror(errno);
    return nullptr;
  }
  // Extended acks: the kernel may attach its error text to a failing ack.
  int one = 1;
  (void)mnl_socket_setsockopt(self->nl_, NETLINK_EXT_ACK, &one, sizeof one);
  self->portid_ = mnl_socket_get_portid(self->nl_);
  self->seq_ = static_cast<std::uint32_t>(std::time(nullptr));
  return self;
}

RtnlSocket::~RtnlSocket() {
  if (nl_ != nullptr) mnl_socket_close(nl_);
}

int RtnlSocket::fd() const noexcept {
  return mnl_socket_get_fd(nl_);
}

namespace {

struct CallbackData {
  const std::function<void(const nlmsghdr*)>* each;
};

int message_cb(const nlmsghdr* nlh, void* data) {
  auto* cb = static_cast<CallbackData*>(data);
  if (cb->each != nullptr) (*cb->each)(nlh);
  return MNL_CB_OK;
}

}  // namespace

int RtnlSocket::request(nlmsghdr* nlh) noexcept {
  const std::uint32_t seq = next_seq();
  nlh->nlmsg_seq = seq;
  nlh->nlmsg_flags |= NLM_F_ACK;
  if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) return -errno;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(nl_, buf.data(), buf.size());
    if (n < 0) return -errno;
    // mnl_cb_run turns an error ack into -1/errno and a zero ack into STOP.
    const int ret =
        mnl_cb_run(buf.data(), static_cast<std::size_t>(n), seq, portid_, nullptr, nullptr);
    if (ret == MNL_CB_ERROR) return -errno;
    if (ret == MNL_CB_STOP) return 0;
  }
}

int RtnlSocket::dump(nlmsghdr* nlh, const std::function<void(const nlmsghdr*)>& each) {
  const std::uint32_t seq = next_seq();
  nlh->nlmsg_seq = seq;
  if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0) return -errno;
  std::vector<char> buf(kDumpBufferSize);
  CallbackData data{&each};
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(nl_, buf.data(), buf.size());
    if (n < 0) return -errno;
    const int ret =
        mnl_cb_run(buf.data(), static_cast<std::size_t>(n), seq, portid_, message_cb, &data);
    if (ret == MNL_CB_ERROR) return -errno;
    if (ret == MNL_CB_STOP) return 0;
  }
}

int RtnlSocket::read_notifications(const std::function<void(const nlmsghdr*)>& each) {
  std::vector<char> buf(kDumpBufferSize);
  const ssize_t n = ::recv(fd(), buf.data(), buf.size(), MSG_DONTWAIT);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
  int count = 0;
  const auto* nlh = reinterpret_cast<const nlmsghdr*>(buf.data());
  int len = static_cast<int>(n);
  while (mnl_nlmsg_ok(nlh, len)) {
    if (nlh->nlmsg_type >= NLMSG_MIN_TYPE) {
      each(nlh);
      ++count;
    }
    nlh = mnl_nlmsg_next(nlh, &len);
  }
  return count;
}

}  // namespace xdpvhost::nic

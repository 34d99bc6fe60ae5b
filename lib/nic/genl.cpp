#include "nic/genl.hpp"

#include <linux/genetlink.h>
#include <sys/socket.h>

#include <cerrno>
#include <vector>

namespace xdpvhost::nic::genl {

MnlSocket open(bool nonblocking) {
  MnlSocket nl(mnl_socket_open2(NETLINK_GENERIC, SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0)));
  if (nl && mnl_socket_bind(nl.get(), 0, MNL_SOCKET_AUTOPID) < 0) return nullptr;
  return nl;
}

nlmsghdr* put_header(char* buf, std::uint16_t type, std::uint8_t cmd, std::uint32_t seq) {
  nlmsghdr* nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = type;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
  nlh->nlmsg_seq = seq;
  auto* header = static_cast<genlmsghdr*>(mnl_nlmsg_put_extra_header(nlh, sizeof(genlmsghdr)));
  header->cmd = cmd;
  header->version = 1;
  return nlh;
}

int transact(mnl_socket* nl, nlmsghdr* nlh, mnl_cb_t cb, void* data) {
  const std::uint32_t portid = mnl_socket_get_portid(nl);
  const std::uint32_t seq = nlh->nlmsg_seq;
  if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) return -errno;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  for (;;) {
    const ssize_t n = mnl_socket_recvfrom(nl, buf.data(), buf.size());
    if (n < 0) return -errno;
    const int ret = mnl_cb_run(buf.data(), static_cast<std::size_t>(n), seq, portid, cb, data);
    if (ret < 0) return -errno;
    if (ret == MNL_CB_STOP) return 0;
  }
}

namespace {

// Runs `each` over the attributes nested in `nest` (mnl_attr_for_each_nested,
// without its C casts).
template <typename Each>
void for_each_nested(const nlattr* nest, Each each) {
  const auto* at = static_cast<const char*>(mnl_attr_get_payload(nest));
  const auto* end = at + mnl_attr_get_payload_len(nest);
  for (auto* attr = reinterpret_cast<const nlattr*>(at);
       mnl_attr_ok(attr, static_cast<int>(end - reinterpret_cast<const char*>(attr)));
       attr = mnl_attr_next(attr))
    each(attr);
}

// One CTRL_ATTR_MCAST_GROUPS entry: a nest of name and id.
void group_cb(const nlattr* attr, Family* out) {
  std::string name;
  std::uint32_t id = 0;
  for_each_nested(attr, [&](const nlattr* inner) {
    if (mnl_attr_get_type(inner) == CTRL_ATTR_MCAST_GRP_NAME &&
        mnl_attr_validate(inner, MNL_TYPE_NUL_STRING) == 0)
      name = mnl_attr_get_str(inner);
    else if (mnl_attr_get_type(inner) == CTRL_ATTR_MCAST_GRP_ID &&
             mnl_attr_validate(inner, MNL_TYPE_U32) == 0)
      id = mnl_attr_get_u32(inner);
  });
  if (!name.empty() && id != 0) out->groups[name] = id;
}

int family_attr_cb(const nlattr* attr, void* data) {
  auto* out = static_cast<Family*>(data);
  switch (mnl_attr_get_type(attr)) {
    case CTRL_ATTR_FAMILY_ID:
      if (mnl_attr_validate(attr, MNL_TYPE_U16) == 0) out->id = mnl_attr_get_u16(attr);
      break;
    case CTRL_ATTR_MCAST_GROUPS:
      if (mnl_attr_validate(attr, MNL_TYPE_NESTED) == 0) {
        for_each_nested(attr, [out](const nlattr* group) {
          if (mnl_attr_validate(group, MNL_TYPE_NESTED) == 0) group_cb(group, out);
        });
      }
      break;
    default:
      break;
  }
  return MNL_CB_OK;
}

int family_cb(const nlmsghdr* nlh, void* data) {
  return mnl_attr_parse(nlh, sizeof(genlmsghdr), family_attr_cb, data);
}

}  // namespace

int resolve(mnl_socket* nl, const char* name, Family& out) {
  out = Family{};
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  nlmsghdr* nlh = put_header(buf.data(), GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1);
  mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, name);
  if (const int err = transact(nl, nlh, family_cb, &out); err != 0) return err;
  return out.id == 0 ? -ENOENT : 0;
}

}  // namespace xdpvhost::nic::genl

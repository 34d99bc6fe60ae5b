// Busy-poll socket options on an ordinary UDP socket (the options live on
// every socket). Refusals are produced for real: the scenario runs in a
// child that has dropped CAP_NET_ADMIN. The AF_XDP socket is covered by the
// integration suite.
#include "xsk/busy_poll.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <cerrno>

#include "child_process.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::xsk {
namespace {

sys::UniqueFd udp_socket() {
  return sys::UniqueFd(::socket(AF_INET, SOCK_DGRAM, 0));
}

TEST(BusyPoll, ReadsTheSettingsOfAFreshSocket) {
  const sys::UniqueFd fd = udp_socket();
  BusyPollSettings s;
  s.prefer = true;
  ASSERT_EQ(read_busy_poll(fd.get(), s), 0);
  EXPECT_FALSE(s.prefer);
}

TEST(BusyPoll, TurningItOffIsAlwaysAllowed) {
  const sys::UniqueFd fd = udp_socket();
  const BusyPollOutcome o = apply_busy_poll(fd.get(), BusyPollConfig{0, 0, false});
  EXPECT_TRUE(o.applied) << o.reason;
  EXPECT_TRUE(o.reason.empty());
  EXPECT_EQ(o.in_effect, (BusyPollSettings{0, false}));
}

TEST(BusyPoll, UnboundSocketHasNoNapiId) {
  const sys::UniqueFd fd = udp_socket();
  std::uint32_t id = 123;
  ASSERT_EQ(read_napi_id(fd.get(), id), 0);
  EXPECT_EQ(id, 0u);
}

TEST(BusyPoll, DriveNapiNeverBlocks) {
  const sys::UniqueFd fd = udp_socket();
  EXPECT_EQ(drive_napi(fd.get()), -EAGAIN);
}

TEST(BusyPoll, RefusedPreferenceLeavesEverythingAsItWas) {
  const std::string result = test::run_in_child([] {
    if (!test::drop_capability(CAP_NET_ADMIN)) return std::string("capset failed");
    const sys::UniqueFd fd = udp_socket();
    BusyPollSettings before;
    if (read_busy_poll(fd.get(), before) != 0) return std::string("read failed");
    // usecs unchanged and budget 0 need no privilege; prefer = true does.
    const BusyPollOutcome o = apply_busy_poll(fd.get(), BusyPollConfig{before.usecs, 0, true});
    if (o.applied) return std::string("applied without CAP_NET_ADMIN");
    if (!(o.in_effect == before)) return std::string("settings changed");
    return o.reason;
  });
  EXPECT_NE(result.find("SO_PREFER_BUSY_POLL=1 refused: Operation not permitted"),
            std::string::npos)
      << result;
  EXPECT_NE(result.find("rolled back"), std::string::npos) << result;
}

TEST(BusyPoll, RefusedBudgetRestoresTheTimeAlreadySet) {
  const std::string result = test::run_in_child([] {
    if (!test::drop_capability(CAP_NET_ADMIN)) return std::string("capset failed");
    const sys::UniqueFd fd = udp_socket();
    BusyPollSettings before;
    if (read_busy_poll(fd.get(), before) != 0) return std::string("read failed");
    // Linux 6.18 lets anyone raise SO_BUSY_POLL, so usecs changes first; the
    // budget raise then needs CAP_NET_ADMIN and the time must be restored.
    // (Older kernels refuse the usecs raise already; the rollback is the
    // same.)
    const BusyPollOutcome o =
        apply_busy_poll(fd.get(), BusyPollConfig{before.usecs + 10, 64, false});
    if (o.applied) return std::string("applied without CAP_NET_ADMIN");
    if (!(o.in_effect == before))
      return "settings changed: usecs " + std::to_string(o.in_effect.usecs);
    return o.reason;
  });
  EXPECT_NE(result.find("refused: Operation not permitted"), std::string::npos) << result;
  EXPECT_NE(result.find("rolled back"), std::string::npos) << result;
  EXPECT_EQ(result.find("SO_PREFER_BUSY_POLL"), std::string::npos) << result;  // never reached
}

}  // namespace
}  // namespace xdpvhost::xsk

// LinkMonitor against real interfaces created and changed in the test's
// namespace: added, up, down (admin and carrier), renamed, deleted.
#include "nic/link_monitor.hpp"

#include <poll.h>

#include "netns_fixture.hpp"

namespace xdpvhost::xsk::test {
namespace {

class LinkMonitorTest : public NetnsPair {
 protected:
  void SetUp() override {
    NetnsPair::SetUp();
    if (HasFatalFailure()) return;
    std::string error;
    monitor_ = LinkMonitor::open(error);
    ASSERT_TRUE(monitor_) << error;
    std::vector<LinkEvent> initial;
    ASSERT_GE(monitor_->read_events(initial), 2);  // lo and xskv0
  }

  // Events for `ifname` until one of `kind` arrives (or ~2 s pass).
  std::vector<LinkEvent> wait_for(const std::string& ifname, LinkEvent::Kind kind) {
    std::vector<LinkEvent> seen;
    for (int waited = 0; waited <= 2000; waited += 10) {
      std::vector<LinkEvent> batch;
      EXPECT_GE(monitor_->read_events(batch), 0);
      for (auto& e : batch) {
        if (e.ifname != ifname) continue;
        seen.push_back(e);
        if (e.kind == kind) return seen;
      }
      pollfd p{monitor_->fd(), POLLIN, 0};
      ::poll(&p, 1, 10);
    }
    ADD_FAILURE() << "no '" << to_string(kind) << "' event for " << ifname;
    return seen;
  }

  void sh(const std::string& command) {
    std::string out;
    ASSERT_EQ(run_in_a(command, &out), 0) << command << ": " << out;
  }

  std::unique_ptr<LinkMonitor> monitor_;
};

TEST_F(LinkMonitorTest, KnowsTheLinksPresentAtStart) {
  LinkEvent e;
  ASSERT_TRUE(monitor_->lookup(kIfA, e));
  EXPECT_TRUE(e.up);
  EXPECT_GT(e.ifindex, 0);
}

TEST_F(LinkMonitorTest, SeesAddUpDownAndDelete) {
  sh("ip link add xskm0 type veth peer name xskm1");
  auto ev = wait_for("xskm0", LinkEvent::Kind::kAdded);
  ASSERT_FALSE(ev.empty());
  EXPECT_FALSE(ev.back().up);

  sh("ip link set xskm1 up && ip link set xskm0 up");
  ev = wait_for("xskm0", LinkEvent::Kind::kUp);
  ASSERT_FALSE(ev.empty());
  EXPECT_TRUE(ev.back().up);

  sh("ip link set xskm1 down");  // carrier lost on xskm0, still admin up
  ev = wait_for("xskm0", LinkEvent::Kind::kDown);
  ASSERT_FALSE(ev.empty());
  EXPECT_FALSE(ev.back().up);

  sh("ip link set xskm1 up");
  wait_for("xskm0", LinkEvent::Kind::kUp);
  sh("ip link set xskm0 down");  // admin down
  wait_for("xskm0", LinkEvent::Kind::kDown);

  const int ifindex = ev.back().ifindex;
  sh("ip link del xskm0");
  ev = wait_for("xskm0", LinkEvent::Kind::kDeleted);
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().ifindex, ifindex);
  LinkEvent gone;
  EXPECT_FALSE(monitor_->lookup("xskm0", gone));
}

TEST_F(LinkMonitorTest, SeesTheUplinkGoDownAndComeBack) {
  sh(std::string("ip link set ") + kIfA + " down");
  wait_for(kIfA, LinkEvent::Kind::kDown);
  sh(std::string("ip link set ") + kIfA + " up");
  wait_for(kIfA, LinkEvent::Kind::kUp);
}

TEST_F(LinkMonitorTest, SeesARename) {
  sh("ip link add xskm2 type dummy 2>/dev/null || ip link add xskm2 type ifb");
  wait_for("xskm2", LinkEvent::Kind::kAdded);
  sh("ip link set xskm2 name xskm3");
  const auto ev = wait_for("xskm3", LinkEvent::Kind::kRenamed);
  ASSERT_FALSE(ev.empty());
  LinkEvent state;
  EXPECT_TRUE(monitor_->lookup("xskm3", state));
}

}  // namespace
}  // namespace xdpvhost::xsk::test

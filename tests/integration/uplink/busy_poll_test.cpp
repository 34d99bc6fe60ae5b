// Busy polling, both kinds: NAPI busy polling of the NIC (napi_busy_poll,
// docs/techniques.md) switched on and off at run time -- on veth the socket never gets
// a NAPI id, which the status must say -- and the service thread's own busy
// polling (busy_poll_us): 0 is pure event mode. Traffic works both
// ways in every mode.

#include "uplink_fixture.hpp"

namespace xdpvhost::uplink_test {
namespace {

class BusyPoll : public UplinkTest {
 protected:
  json napi() { return uplink_status().at("queues").at(0).at("napi_busy_poll"); }
  std::unique_ptr<FrontendGuest> vm1_;
};

TEST_F(BusyPoll, NapiBusyPollOnAndOffAtRunTime) {
  ASSERT_NO_FATAL_FAILURE(start_with_guest(vm1_));
  json q = uplink_status().at("queues").at(0);
  EXPECT_EQ(q.value("napi_id", 99u), 0u) << "veth attaches no NAPI to its queue";
  EXPECT_EQ(napi(), json({{"requested", false}, {"active", false}, {"reason", "not requested"}}));
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1, 200));

  json set = call("tunables.set", {{"uplink", "up0"}, {"napi_busy_poll", true}});
  ASSERT_FALSE(set.is_null());
  EXPECT_EQ(set.at("tunables").value("napi_busy_poll", false), true) << set.dump();
  ASSERT_TRUE(wait_for([&] { return napi().value("requested", false); })) << napi().dump();
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1, 200));
  q = uplink_status().at("queues").at(0);
  EXPECT_EQ(q.value("napi_id", 99u), 0u);
  EXPECT_EQ(q.at("napi_busy_poll").value("active", true), false)
      << "active without a NAPI id: nothing can be busy-polled";
  EXPECT_NE(q.at("napi_busy_poll").value("reason", "").find("napi id"), std::string::npos)
      << q.dump();
  std::cout << "napi_busy_poll on, veth: " << q.at("napi_busy_poll").dump() << "\n";

  set = call("tunables.set", {{"uplink", "up0"}, {"napi_busy_poll", false}});
  ASSERT_FALSE(set.is_null());
  ASSERT_TRUE(wait_for([&] { return !napi().value("requested", true); })) << napi().dump();
  EXPECT_EQ(napi(), json({{"requested", false}, {"active", false}, {"reason", "not requested"}}));
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1, 200));
}

TEST_F(BusyPoll, NapiBusyPollRequestedInTheConfig) {
  ASSERT_NO_FATAL_FAILURE(
      start_with_guest(vm1_, json{{"napi_busy_poll", true}, {"busy_poll_budget", 16}}));
  EXPECT_EQ(napi().value("requested", false), true) << napi().dump();
  EXPECT_EQ(napi().value("active", true), false) << napi().dump();
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1, 200));
}

TEST_F(BusyPoll, EventModeAndFiftyMicroseconds) {
  ASSERT_NO_FATAL_FAILURE(start_with_guest(vm1_));
  for (std::uint32_t us : {0u, 50u, 0u}) {
    SCOPED_TRACE("busy_poll_us " + std::to_string(us));
    const json set = call("tunables.set", {{"busy_poll_us", us}});
    ASSERT_FALSE(set.is_null());
    EXPECT_EQ(set.at("tunables").value("busy_poll_us", 999u), us) << set.dump();
    ASSERT_TRUE(wait_for(
        [&] { return call("status").at("threads").at(0).value("busy_poll_us", 999u) == us; }));
    ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1, 300));
    // Idle, the thread goes to sleep in either mode.
    EXPECT_TRUE(wait_for([&] {
      return call("status").at("threads").at(0).value("state", "") == "sleeping";
    })) << call("status").at("threads").dump();
  }
}

}  // namespace
}  // namespace xdpvhost::uplink_test

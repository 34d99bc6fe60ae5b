// UnicastFilter's netlink calls, checked with iproute2: after add(),
// `bridge fdb show dev IF` lists the MAC as "self permanent"; after remove()
// and after destruction it is gone. A macvlan (bridge mode) refuses such
// entries (EOPNOTSUPP), which exercises the promiscuous fallback.
#include "nic/unicast_filter.hpp"

#include "netns_fixture.hpp"

namespace xdpvhost::xsk::test {
namespace {

const MacAddress kGuest1 = {0x02, 0x00, 0x00, 0x00, 0x01, 0x01};
const MacAddress kGuest2 = {0x02, 0x00, 0x00, 0x00, 0x01, 0x02};

class UnicastFilterTest : public NetnsPair {
 protected:
  std::string fdb(const std::string& dev) {
    std::string out;
    run_in_a("bridge fdb show dev " + dev, &out);
    return out;
  }
  bool listed_self_permanent(const std::string& dev, const MacAddress& mac) {
    return fdb(dev).find(mac.to_string() + " self permanent") != std::string::npos;
  }
  int promiscuity(const std::string& dev) {
    std::string out;
    run_in_a("ip -d link show " + dev, &out);
    const std::size_t at = out.find("promiscuity ");
    return at == std::string::npos ? -1 : std::stoi(out.substr(at + 12));
  }
};

TEST_F(UnicastFilterTest, AddListsTheMacAndRemoveDeletesIt) {
  std::string error;
  auto filter = UnicastFilter::open(kIfA, error);
  ASSERT_TRUE(filter) << error;
  UnicastFilter::Method method = UnicastFilter::Method::kPromiscuous;
  ASSERT_EQ(filter->add(kGuest1, &method), 0);
  EXPECT_EQ(method, UnicastFilter::Method::kUnicastList);
  ASSERT_EQ(filter->add(kGuest2), 0);
  EXPECT_TRUE(listed_self_permanent(kIfA, kGuest1)) << fdb(kIfA);
  EXPECT_TRUE(listed_self_permanent(kIfA, kGuest2)) << fdb(kIfA);
  EXPECT_EQ(filter->unicast_entries(), 2u);
  EXPECT_FALSE(filter->promiscuous());
  // veth has no IFF_UNICAST_FLT: the kernel itself goes promiscuous while
  // the list is non-empty (our filter holds no promiscuity of its own).
  EXPECT_EQ(promiscuity(kIfA), 1);

  ASSERT_EQ(filter->remove(kGuest1), 0);
  EXPECT_FALSE(listed_self_permanent(kIfA, kGuest1)) << fdb(kIfA);
  EXPECT_TRUE(listed_self_permanent(kIfA, kGuest2));
  EXPECT_EQ(filter->remove(kGuest1), -ENOENT);

  filter.reset();  // the destructor removes the rest
  EXPECT_FALSE(listed_self_permanent(kIfA, kGuest2)) << fdb(kIfA);
  EXPECT_EQ(promiscuity(kIfA), 0);
}

TEST_F(UnicastFilterTest, AnEntryLeftByAKilledDaemonIsAdopted) {
  std::string out;
  ASSERT_EQ(
      run_in_a("bridge fdb add " + kGuest1.to_string() + " dev " + kIfA + " self permanent", &out),
      0)
      << out;
  std::string error;
  auto filter = UnicastFilter::open(kIfA, error);
  ASSERT_TRUE(filter) << error;
  EXPECT_EQ(filter->netlink_add(kGuest1), -EEXIST);
  ASSERT_EQ(filter->add(kGuest1), 0);
  filter.reset();
  EXPECT_FALSE(listed_self_permanent(kIfA, kGuest1)) << fdb(kIfA);
}

TEST_F(UnicastFilterTest, RefusingDeviceFallsBackToPromiscuousMode) {
  std::string out;
  ASSERT_EQ(run_in_a(std::string("ip link add link ") + kIfA +
                         " name xskmv0 type macvlan mode bridge && ip link set xskmv0 up",
                     &out),
            0)
      << out;
  std::string error;
  auto filter = UnicastFilter::open("xskmv0", error);
  ASSERT_TRUE(filter) << error;
  EXPECT_EQ(filter->netlink_add(kGuest1), -EOPNOTSUPP);
  const int before = promiscuity("xskmv0");

  UnicastFilter::Method method = UnicastFilter::Method::kUnicastList;
  std::string reason;
  ASSERT_EQ(filter->add(kGuest1, &method, &reason), 0);
  EXPECT_EQ(method, UnicastFilter::Method::kPromiscuous);
  EXPECT_NE(reason.find("Operation not supported"), std::string::npos) << reason;
  ASSERT_EQ(filter->add(kGuest2, &method), 0);
  EXPECT_EQ(method, UnicastFilter::Method::kPromiscuous);
  EXPECT_EQ(filter->promiscuous_users(), 2u);
  EXPECT_EQ(promiscuity("xskmv0"), before + 1);  // one reference for both

  ASSERT_EQ(filter->remove(kGuest1), 0);
  EXPECT_EQ(promiscuity("xskmv0"), before + 1);
  ASSERT_EQ(filter->remove(kGuest2), 0);
  EXPECT_FALSE(filter->promiscuous());
  EXPECT_EQ(promiscuity("xskmv0"), before);

  ASSERT_EQ(filter->add(kGuest1), 0);
  EXPECT_EQ(promiscuity("xskmv0"), before + 1);
  filter.reset();
  EXPECT_EQ(promiscuity("xskmv0"), before);
}

TEST_F(UnicastFilterTest, IfbAcceptsEntries) {
  std::string out;
  ASSERT_EQ(run_in_a("ip link add xskifb0 type ifb", &out), 0) << out;
  std::string error;
  auto filter = UnicastFilter::open("xskifb0", error);
  ASSERT_TRUE(filter) << error;
  UnicastFilter::Method method = UnicastFilter::Method::kPromiscuous;
  ASSERT_EQ(filter->add(kGuest1, &method), 0);
  EXPECT_EQ(method, UnicastFilter::Method::kUnicastList);
  EXPECT_TRUE(listed_self_permanent("xskifb0", kGuest1)) << fdb("xskifb0");
}

TEST_F(UnicastFilterTest, UnknownInterfaceIsAnError) {
  std::string error;
  EXPECT_FALSE(UnicastFilter::open("xsk-missing", error));
  EXPECT_NE(error.find("xsk-missing"), std::string::npos);
}

}  // namespace
}  // namespace xdpvhost::xsk::test

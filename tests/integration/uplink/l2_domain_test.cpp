// Uplinks are separate networks: a tenant on one uplink's guests cannot
// reach the guests of another, nor those with no uplink, through the real
// daemon, two real veth uplinks with native XDP (two LANs) and the C++
// vhost-user frontend. vm1 is on up0 (xvu-n0), vm2 on up1 (xvu-n1), vm3 has
// no uplink. Each test asserts what the guests and the two wires see.

#include <csignal>
#include <fstream>

#include "peer_sockets.hpp"
#include "uplink_fixture.hpp"

namespace xdpvhost::uplink_test {
namespace {

using namespace std::chrono_literals;

inline constexpr GuestAddress kVm3{"vm3", "52:54:00:00:20:03", "10.99.0.13"};

class L2Domain : public UplinkTest {
 protected:
  // up0 and up1 (up1's extra keys, e.g. its l2_domain), vm1 on up0, vm2 on
  // up1, vm3 on none, all three connected.
  void start(const json& up1_extra = json::object()) {
    std::string error;
    ASSERT_TRUE(lab_.create_second_veth(error)) << error;
    json up1 = {{"name", "up1"}, {"interface", UplinkLab::kSecondLan.node_if}, {"queues", {0}}};
    up1.update(up1_extra);
    json vm2 = port_config(kVm2);
    vm2["uplink"] = "up1";
    json vm3 = port_config(kVm3);
    vm3.erase("uplink");
    ASSERT_NO_FATAL_FAILURE(start_daemon(daemon_config(
        json::array({uplink_config(), up1}), json::array({port_config(kVm1), vm2, vm3}))));
    ASSERT_NO_FATAL_FAILURE(connect_guest(vm1_, kVm1));
    ASSERT_NO_FATAL_FAILURE(connect_guest(vm2_, kVm2));
    ASSERT_NO_FATAL_FAILURE(connect_guest(vm3_, kVm3));
    wire0_ = capture(UplinkLab::kPeerIf);
    wire1_ = capture(UplinkLab::kSecondLan.peer_if);
  }
  // A packet socket on the peer's end of a veth: what the node sent there.
  std::unique_ptr<PacketSocket> capture(const char* ifname) {
    NetnsScope in(lab_.peer_fd());
    EXPECT_TRUE(in.ok());
    auto s = std::make_unique<PacketSocket>(ifname, 0x0003, 4 << 20);
    EXPECT_TRUE(s->valid());
    return s;
  }
  // Each guest sends a broadcast (an ARP request for vm1's or vm2's
  // address) and a UDP frame to each other guest's MAC, port 7400 + sender.
  void every_guest_sends() {
    for (auto* vm : {vm1_.get(), vm2_.get(), vm3_.get()}) vm->clear_received();
    ASSERT_TRUE(vm1_->send(vm1_->arp_request(parse_ipv4_text(kVm2.ip))));
    ASSERT_TRUE(vm2_->send(vm2_->arp_request(parse_ipv4_text(kVm1.ip))));
    ASSERT_TRUE(vm3_->send(vm3_->arp_request(parse_ipv4_text(kVm1.ip))));
    const std::vector<std::pair<FrontendGuest*, GuestAddress>> all{
        {vm1_.get(), kVm1}, {vm2_.get(), kVm2}, {vm3_.get(), kVm3}};
    for (std::size_t s = 0; s < all.size(); ++s) {
      for (const auto& [to, address] : all) {
        if (to == all[s].first) continue;
        ASSERT_TRUE(all[s].first->send(
            all[s].first->udp_to(to->mac(), to->ip(), 7000, static_cast<std::uint16_t>(7401 + s),
                                 testing::payload_pattern(60, static_cast<unsigned>(s)))));
      }
    }
    for (auto* vm : {vm1_.get(), vm2_.get(), vm3_.get()}) ASSERT_TRUE(vm->wait_tx_done());
    for (auto* vm : {vm1_.get(), vm2_.get(), vm3_.get()}) vm->pump(300ms);
  }
  // Frames `vm` received from `sender`: its broadcast, its UDP.
  static std::size_t broadcasts_from(const FrontendGuest& vm, const FrontendGuest& sender) {
    return vm.count([&](const PacketView& v) { return v.src == sender.mac() && v.arp_op == 1; });
  }
  static std::size_t udp_from(const FrontendGuest& vm, const FrontendGuest& sender) {
    return vm.count([&](const PacketView& v) { return v.src == sender.mac() && v.udp; });
  }
  // Of `frames`, those a guest sent from `mac`: broadcasts and UDP.
  static std::size_t from(const std::vector<std::vector<std::uint8_t>>& frames,
                          const MacAddress& mac, bool broadcast) {
    std::size_t n = 0;
    for (const auto& f : frames) {
      const PacketView v = PacketView::parse(f);
      if (v.src == mac && (broadcast ? v.arp && v.is_broadcast() : v.udp)) ++n;
    }
    return n;
  }

  std::unique_ptr<FrontendGuest> vm1_, vm2_, vm3_;
  std::unique_ptr<PacketSocket> wire0_, wire1_;
};

TEST_F(L2Domain, EachUplinksGuestsAreANetworkOfTheirOwn) {
  ASSERT_NO_FATAL_FAILURE(start());
  EXPECT_EQ(call("uplink.list")[1].value("l2_domain", ""), "up1");
  ASSERT_NO_FATAL_FAILURE(every_guest_sends());

  // No frame of one domain reached a guest of another.
  const std::vector<std::pair<const FrontendGuest*, const char*>> guests{
      {vm1_.get(), "vm1"}, {vm2_.get(), "vm2"}, {vm3_.get(), "vm3"}};
  for (const auto& [to, to_name] : guests)
    for (const auto& [sender, sender_name] : guests)
      if (to != sender) {
        EXPECT_EQ(broadcasts_from(*to, *sender), 0u)
            << to_name << " got " << sender_name << "'s broadcast";
        EXPECT_EQ(udp_from(*to, *sender), 0u) << to_name << " got " << sender_name << "'s unicast";
      }
  // Each uplink guest's frames left through its own uplink only, the
  // unicast to another network's guest as to any MAC not in its domain.
  const auto on0 = wire0_->receive(64, 300);
  const auto on1 = wire1_->receive(64, 300);
  EXPECT_EQ(from(on0, vm1_->mac(), true), 1u);
  EXPECT_EQ(from(on0, vm1_->mac(), false), 2u);
  EXPECT_EQ(from(on1, vm2_->mac(), true), 1u);
  EXPECT_EQ(from(on1, vm2_->mac(), false), 2u);
  EXPECT_EQ(from(on1, vm1_->mac(), true) + from(on1, vm1_->mac(), false), 0u);
  EXPECT_EQ(from(on0, vm2_->mac(), true) + from(on0, vm2_->mac(), false), 0u);
  for (const auto* wire : {&on0, &on1})
    EXPECT_EQ(from(*wire, vm3_->mac(), true) + from(*wire, vm3_->mac(), false), 0u);
  // vm3 has nowhere to send a MAC it does not reach: dropped, counted.
  EXPECT_TRUE(wait_for([&] {
    return port_stats("vm3").at("drops").value("unknown_destination", std::uint64_t{0}) == 2;
  })) << port_stats("vm3").dump();
  for (const char* port : {"vm1", "vm2"})
    EXPECT_EQ(total(port_stats(port).at("drops")), 0u) << port_stats(port).dump();
}

// Uplinks given one l2_domain let their guests reach each other, never one
// uplink's wire the other's guests; a reload that joins or parts them
// applies at once, the guests' connections staying up.
TEST_F(L2Domain, UplinksGivenOneDomainShareItAndAReloadChangesItInPlace) {
  ASSERT_NO_FATAL_FAILURE(start({{"l2_domain", "up0"}}));
  EXPECT_EQ(call("uplink.list")[1].value("l2_domain", ""), "up0");
  ASSERT_NO_FATAL_FAILURE(every_guest_sends());
  EXPECT_EQ(broadcasts_from(*vm1_, *vm2_), 1u);
  EXPECT_EQ(broadcasts_from(*vm2_, *vm1_), 1u);
  EXPECT_EQ(udp_from(*vm1_, *vm2_), 1u);
  EXPECT_EQ(udp_from(*vm2_, *vm1_), 1u);
  for (auto* other : {vm1_.get(), vm2_.get()}) {
    EXPECT_EQ(broadcasts_from(*vm3_, *other) + udp_from(*vm3_, *other), 0u);
    EXPECT_EQ(broadcasts_from(*other, *vm3_) + udp_from(*other, *vm3_), 0u);
  }
  // A guest's broadcast still goes out through its own uplink only, and a
  // frame to a guest of the domain not at all.
  const auto on0 = wire0_->receive(64, 300);
  const auto on1 = wire1_->receive(64, 300);
  EXPECT_EQ(from(on1, vm2_->mac(), true), 1u);
  EXPECT_EQ(from(on0, vm2_->mac(), true), 0u);
  EXPECT_EQ(from(on1, vm1_->mac(), true), 0u);
  EXPECT_EQ(from(on0, vm1_->mac(), false), 1u) << "only the frame to vm3";
  EXPECT_EQ(from(on1, vm2_->mac(), false), 1u) << "only the frame to vm3";

  // The file parts them again: applied in place (no port re-created).
  const auto path = daemon_->dir() / "config.json";
  json file;
  std::ifstream(path) >> file;
  file["uplinks"][1].erase("l2_domain");
  std::ofstream(path) << file.dump(2);
  ASSERT_EQ(::kill(daemon_->pid(), SIGHUP), 0);
  ASSERT_TRUE(wait_for([&] {
    return daemon_->log().find("reload: uplink up1: l2_domain up1") != std::string::npos &&
           daemon_->log().find("reload: 1 service thread(s)") != std::string::npos;
  })) << daemon_->log_tail();
  EXPECT_EQ(call("uplink.list")[1].value("l2_domain", ""), "up1");
  EXPECT_EQ(daemon_->log().find(": removed"), std::string::npos) << daemon_->log_tail();
  ASSERT_NO_FATAL_FAILURE(every_guest_sends());
  EXPECT_EQ(broadcasts_from(*vm1_, *vm2_) + udp_from(*vm1_, *vm2_), 0u);
  EXPECT_EQ(broadcasts_from(*vm2_, *vm1_) + udp_from(*vm2_, *vm1_), 0u);
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1));
}

}  // namespace
}  // namespace xdpvhost::uplink_test

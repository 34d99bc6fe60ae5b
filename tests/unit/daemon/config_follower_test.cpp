// runtime/config_follower.hpp against a real inotify and a directory laid
// out as the kubelet lays out a ConfigMap volume (pkg/volume/util/
// atomic_writer.go: a timestamped directory, the "..data" symlink renamed
// over the old one, the file a symlink through it), an editor's rename and
// a write in place; 2000 updates followed hold no fd; a directory removed
// and made again is followed again, 200 times over with no fd held.

#include "runtime/config_follower.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

namespace xdpvhost::daemon {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::size_t open_fds() {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++n;
  }
  return n;
}

class ConfigFollowerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "xdpvhost-follow-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // One version as the kubelet's atomic writer publishes it.
  void publish(int version) {
    const std::string stamp = "..2026_12_07_02_00_00." + std::to_string(version);
    fs::create_directory(dir_ / stamp);
    std::ofstream(dir_ / stamp / "config.json") << "{\"version\": " << version << "}";
    fs::create_directory_symlink(stamp, dir_ / "..data_tmp");
    fs::rename(dir_ / "..data_tmp", dir_ / "..data");
    if (!fs::is_symlink(dir_ / "config.json"))
      fs::create_symlink("..data/config.json", dir_ / "config.json");
    if (!previous_.empty()) fs::remove_all(dir_ / previous_);
    previous_ = stamp;
  }

  // Runs the loop until `changes` reaches `want` or the time is up.
  void run_until(boost::asio::io_context& io, const int& changes, int want) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (changes < want && std::chrono::steady_clock::now() < deadline) io.run_one_for(20ms);
    io.restart();
  }

  fs::path dir_;
  std::string previous_;
};

TEST_F(ConfigFollowerTest, AConfigMapUpdateIsOneChange) {
  publish(1);
  boost::asio::io_context io;
  int changes = 0;
  ConfigFollower follower(
      io, (dir_ / "config.json").string(), [&] { ++changes; }, 50ms);
  ASSERT_EQ(follower.start(), "");
  publish(2);
  run_until(io, changes, 1);
  EXPECT_EQ(changes, 1);
  std::ifstream in(dir_ / "config.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{\"version\": 2}");
  // Settled: the events of one update are one change.
  io.run_for(200ms);
  EXPECT_EQ(changes, 1);
}

TEST_F(ConfigFollowerTest, AnEditorsRenameAndAWriteInPlaceAreChangesAndOtherFilesAreNot) {
  const fs::path file = dir_ / "config.json";
  std::ofstream(file) << "{}";
  boost::asio::io_context io;
  int changes = 0;
  ConfigFollower follower(
      io, file.string(), [&] { ++changes; }, 50ms);
  ASSERT_EQ(follower.start(), "");
  std::ofstream(dir_ / "other.json") << "{}";
  std::ofstream(dir_ / ".config.json.swp") << "x";
  io.run_for(200ms);
  io.restart();
  EXPECT_EQ(changes, 0);
  std::ofstream(dir_ / "config.json.new") << "{\"a\": 1}";
  fs::rename(dir_ / "config.json.new", file);
  run_until(io, changes, 1);
  EXPECT_EQ(changes, 1);
  std::ofstream(file, std::ios::app) << " ";
  run_until(io, changes, 2);
  EXPECT_EQ(changes, 2);
}

TEST_F(ConfigFollowerTest, ADirectoryThatCannotBeWatchedIsAnError) {
  boost::asio::io_context io;
  ConfigFollower follower(io, (dir_ / "absent" / "config.json").string(), [] {});
  const std::string error = follower.start();
  EXPECT_NE(error.find("cannot watch " + (dir_ / "absent").string()), std::string::npos) << error;
}

TEST_F(ConfigFollowerTest, TwoThousandUpdatesHoldNoFd) {
  publish(0);
  const std::size_t fds = open_fds();
  {
    boost::asio::io_context io;
    int changes = 0;
    ConfigFollower follower(
        io, (dir_ / "config.json").string(), [&] { ++changes; }, 0ms);
    ASSERT_EQ(follower.start(), "");
    const std::size_t watching = open_fds();
    for (int v = 1; v <= 2000; ++v) {
      publish(v);
      run_until(io, changes, v);
      ASSERT_EQ(changes, v);
    }
    EXPECT_EQ(open_fds(), watching);
  }
  EXPECT_EQ(open_fds(), fds);
}

TEST_F(ConfigFollowerTest, ADirectoryRemovedIsSaidAndFollowedAgainOnceItIsBack) {
  const fs::path sub = dir_ / "etc";
  const fs::path file = sub / "config.json";
  fs::create_directory(sub);
  std::ofstream(file) << "{}";
  boost::asio::io_context io;
  int changes = 0;
  std::vector<std::string> said;
  ConfigFollower follower(
      io, file.string(), [&] { ++changes; }, 0ms, 20ms);
  follower.on_watch_changed(
      [&](bool watching, const std::string& why) { said.push_back(watching ? "watching" : why); });
  ASSERT_EQ(follower.start(), "");
  const std::size_t watching = open_fds();
  for (int round = 1; round <= 200; ++round) {
    fs::remove_all(sub);
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (follower.watching() && std::chrono::steady_clock::now() < deadline) io.run_one_for(20ms);
    io.restart();
    ASSERT_FALSE(follower.watching()) << round;
    ASSERT_EQ(said.back(), sub.string() + " was removed") << round;
    // Gone for a while: retried, no change, nothing said again.
    io.run_for(25ms);
    io.restart();
    ASSERT_FALSE(follower.watching());
    fs::create_directory(sub);
    std::ofstream(file) << "{\"round\": " << round << "}";
    run_until(io, changes, round);
    ASSERT_EQ(changes, round) << "the file, as it is once back, is a change";
    ASSERT_TRUE(follower.watching());
    ASSERT_EQ(said.size(), 2u * static_cast<std::size_t>(round));
    ASSERT_EQ(said.back(), "watching");
  }
  EXPECT_EQ(open_fds(), watching);
}

}  // namespace
}  // namespace xdpvhost::daemon

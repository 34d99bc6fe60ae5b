// The /metrics body cache: one render per max_age, whatever the requests.

#include "exposition_cache.hpp"

#include <gtest/gtest.h>

namespace xdpvhost::daemon::metrics {
namespace {

using namespace std::chrono_literals;

TEST(ExpositionCache, RequestsWithinMaxAgeShareOneRender) {
  ExpositionCache::Clock::time_point now{};
  int renders = 0;
  ExpositionCache cache([&] { return "render " + std::to_string(++renders); }, 1000ms,
                        [&] { return now; });
  for (int request = 0; request < 100; ++request) EXPECT_EQ(cache.body(), "render 1");
  now += 999ms;
  EXPECT_EQ(cache.body(), "render 1");
  now += 1ms;
  EXPECT_EQ(cache.body(), "render 2");
  EXPECT_EQ(cache.body(), "render 2");
  now += 10s;
  EXPECT_EQ(cache.body(), "render 3");
  EXPECT_EQ(cache.renders(), 3u);
  EXPECT_EQ(renders, 3);
}

}  // namespace
}  // namespace xdpvhost::daemon::metrics

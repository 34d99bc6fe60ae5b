#include "prometheus_text.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>

namespace xdpvhost::daemon::metrics {
namespace {

TEST(PrometheusText, FamilyAndSamples) {
  PrometheusText out;
  out.family("xdpvhost_x_total", MetricType::kCounter, "Help with \\ and\nnewline.");
  out.sample("xdpvhost_x_total", {{"port", "vm1"}, {"direction", "rx"}}, std::uint64_t{42});
  out.sample("xdpvhost_x_total", {}, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(out.text(),
            "# HELP xdpvhost_x_total Help with \\\\ and\\nnewline.\n"
            "# TYPE xdpvhost_x_total counter\n"
            "xdpvhost_x_total{port=\"vm1\",direction=\"rx\"} 42\n"
            "xdpvhost_x_total 18446744073709551615\n");
}

TEST(PrometheusText, LabelValuesAreEscaped) {
  EXPECT_EQ(escape_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  PrometheusText out;
  out.sample("m", {{"socket", "/tmp/\"x\"\n"}}, std::uint64_t{1});
  EXPECT_EQ(out.text(), "m{socket=\"/tmp/\\\"x\\\"\\n\"} 1\n");
}

TEST(PrometheusText, Values) {
  EXPECT_EQ(format_value(0.0), "0");
  EXPECT_EQ(format_value(12.0), "12");
  EXPECT_EQ(format_value(0.5), "0.5");
  EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_value(std::nan("")), "NaN");
  EXPECT_EQ(std::stod(format_value(1796017360.1665709)), 1796017360.1665709);
}

TEST(PrometheusText, HistogramIsCumulativeAndCountIsInfBucket) {
  PrometheusText out;
  const std::array<std::uint64_t, 3> bounds{1, 2, 4};
  const std::array<std::uint64_t, 4> counts{5, 0, 3, 2};  // last: above 4
  out.histogram("h", {{"thread", "0"}}, bounds, counts, 31);
  EXPECT_EQ(out.text(),
            "h_bucket{thread=\"0\",le=\"1\"} 5\n"
            "h_bucket{thread=\"0\",le=\"2\"} 5\n"
            "h_bucket{thread=\"0\",le=\"4\"} 8\n"
            "h_bucket{thread=\"0\",le=\"+Inf\"} 10\n"
            "h_sum{thread=\"0\"} 31\n"
            "h_count{thread=\"0\"} 10\n");
}

TEST(PrometheusText, HistogramWithoutLabelsStillHasInf) {
  PrometheusText out;
  const std::array<std::uint64_t, 1> bounds{8};
  const std::array<std::uint64_t, 1> counts{2};
  out.histogram("h", {}, bounds, counts, 9);
  EXPECT_EQ(out.text(),
            "h_bucket{le=\"8\"} 2\n"
            "h_bucket{le=\"+Inf\"} 2\n"
            "h_sum 9\n"
            "h_count 2\n");
}

}  // namespace
}  // namespace xdpvhost::daemon::metrics

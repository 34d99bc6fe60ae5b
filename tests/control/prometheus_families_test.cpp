// The families as family_builder.hpp builds them, written by prometheus-cpp's
// TextSerializer: the exposition a scrape gets, checked as text.

#include <prometheus/text_serializer.h>

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>

#include "family_builder.hpp"

namespace xdpvhost::daemon::metrics {
namespace {

using prometheus::MetricType;

std::string text(const Families& families) {
  return prometheus::TextSerializer().Serialize(families);
}

TEST(PrometheusFamilies, FamilyAndSamples) {
  Families out;
  auto f = make_family("xdpvhost_x_total", MetricType::Counter, "Help with \\ and\nnewline.");
  add_sample(f, {{"port", "vm1"}, {"direction", "rx"}}, std::uint64_t{42});
  add_sample(f, {}, std::uint64_t{7});
  out.push_back(std::move(f));
  EXPECT_EQ(text(out),
            "# HELP xdpvhost_x_total Help with \\\\ and\\nnewline.\n"
            "# TYPE xdpvhost_x_total counter\n"
            "xdpvhost_x_total{port=\"vm1\",direction=\"rx\"} 42\n"
            "xdpvhost_x_total 7\n");
}

TEST(PrometheusFamilies, HelpIsEscapedOnce) {
  EXPECT_EQ(escape_help("a\\b\nc \"q\""), "a\\\\b\\nc \"q\"");
  // Quotes need no escaping in HELP; backslash and newline exactly once.
  Families out{make_family("g", MetricType::Gauge, "say \"x\" \\ \n")};
  EXPECT_EQ(text(out), "# HELP g say \"x\" \\\\ \\n\n# TYPE g gauge\n");
}

TEST(PrometheusFamilies, LabelValuesAreEscaped) {
  Families out{make_family("m", MetricType::Gauge, "h")};
  add_sample(out[0], {{"socket", "/tmp/\"x\"\n\\"}}, std::uint64_t{1});
  EXPECT_EQ(text(out), "# HELP m h\n# TYPE m gauge\nm{socket=\"/tmp/\\\"x\\\"\\n\\\\\"} 1\n");
}

TEST(PrometheusFamilies, InfoSeriesHaveValueOne) {
  Families out{make_family("xdpvhost_build_info", MetricType::Gauge, "Build.")};
  add_info(out[0], {{"version", "0.1.0"}, {"protocol", "1"}});
  EXPECT_EQ(text(out),
            "# HELP xdpvhost_build_info Build.\n# TYPE xdpvhost_build_info gauge\n"
            "xdpvhost_build_info{version=\"0.1.0\",protocol=\"1\"} 1\n");
}

TEST(PrometheusFamilies, FamilyWithoutSeriesKeepsHelpAndType) {
  Families out{make_family("xdpvhost_uplink_info", MetricType::Gauge, "Uplinks.")};
  EXPECT_EQ(text(out), "# HELP xdpvhost_uplink_info Uplinks.\n# TYPE xdpvhost_uplink_info gauge\n");
}

// Values are doubles: integers appear as integers up to 16 digits (counters
// are exact up to 2^53), larger ones and fractions with 16 significant digits.
TEST(PrometheusFamilies, Values) {
  Families out{make_family("g", MetricType::Gauge, "h")};
  add_sample(out[0], {{"v", "0"}}, 0.0);
  add_sample(out[0], {{"v", "12"}}, std::uint64_t{12});
  add_sample(out[0], {{"v", "half"}}, 0.5);
  add_sample(out[0], {{"v", "2^53"}}, std::uint64_t{1} << 53);
  add_sample(out[0], {{"v", "15 digits"}}, std::uint64_t{123456789012345});
  add_sample(out[0], {{"v", "max"}}, std::numeric_limits<std::uint64_t>::max());
  add_sample(out[0], {{"v", "inf"}}, std::numeric_limits<double>::infinity());
  add_sample(out[0], {{"v", "start"}}, 1796017360.1665709);
  EXPECT_EQ(text(out),
            "# HELP g h\n# TYPE g gauge\n"
            "g{v=\"0\"} 0\n"
            "g{v=\"12\"} 12\n"
            "g{v=\"half\"} 0.5\n"
            "g{v=\"2^53\"} 9007199254740992\n"
            "g{v=\"15 digits\"} 123456789012345\n"
            "g{v=\"max\"} 1.844674407370955e+19\n"
            "g{v=\"inf\"} +Inf\n"
            "g{v=\"start\"} 1796017360.166571\n");
}

TEST(PrometheusFamilies, SampleLandsInTheFieldOfTheFamilysType) {
  auto c = make_family("c_total", MetricType::Counter, "h");
  auto g = make_family("g", MetricType::Gauge, "h");
  auto u = make_family("u", MetricType::Untyped, "h");
  add_sample(c, {}, 3.0);
  add_sample(g, {}, 4.0);
  add_sample(u, {}, 5.0);
  EXPECT_EQ(c.metric.at(0).counter.value, 3.0);
  EXPECT_EQ(g.metric.at(0).gauge.value, 4.0);
  EXPECT_EQ(u.metric.at(0).untyped.value, 5.0);
  EXPECT_EQ(text({u}), "# HELP u h\n# TYPE u untyped\nu 5\n");
}

// prometheus-cpp writes _count and _sum before the buckets (the format allows
// any order within a series' lines); the buckets are cumulative, the +Inf
// bucket and _count are the total.
TEST(PrometheusFamilies, HistogramIsCumulativeAndCountIsInfBucket) {
  Families out{make_family("h", MetricType::Histogram, "Bursts.")};
  const std::array<std::uint64_t, 3> bounds{1, 2, 4};
  const std::array<std::uint64_t, 4> counts{5, 0, 3, 2};  // last: above 4
  add_histogram(out[0], {{"thread", "0"}}, bounds, counts, 31);
  EXPECT_EQ(text(out),
            "# HELP h Bursts.\n"
            "# TYPE h histogram\n"
            "h_count{thread=\"0\"} 10\n"
            "h_sum{thread=\"0\"} 31\n"
            "h_bucket{thread=\"0\",le=\"1\"} 5\n"
            "h_bucket{thread=\"0\",le=\"2\"} 5\n"
            "h_bucket{thread=\"0\",le=\"4\"} 8\n"
            "h_bucket{thread=\"0\",le=\"+Inf\"} 10\n");
  const auto& h = out[0].metric.at(0).histogram;
  EXPECT_EQ(h.sample_count, 10u);
  EXPECT_EQ(h.bucket.back().cumulative_count, h.sample_count);
}

TEST(PrometheusFamilies, HistogramWithoutLabelsStillHasInf) {
  Families out{make_family("h", MetricType::Histogram, "H.")};
  const std::array<std::uint64_t, 1> bounds{8};
  const std::array<std::uint64_t, 1> counts{2};  // nothing above 8
  add_histogram(out[0], {}, bounds, counts, 9);
  EXPECT_EQ(text(out),
            "# HELP h H.\n"
            "# TYPE h histogram\n"
            "h_count 2\n"
            "h_sum 9\n"
            "h_bucket{le=\"8\"} 2\n"
            "h_bucket{le=\"+Inf\"} 2\n");
}

}  // namespace
}  // namespace xdpvhost::daemon::metrics

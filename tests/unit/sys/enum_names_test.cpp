// One table per enum: names looked up both ways, aliases read but never
// written, and the compile-time check that a table names every value.

#include "sys/enum_names.hpp"

#include <gtest/gtest.h>

#include <cstdint>

namespace xdpvhost::sys {
namespace {

enum class Colour : std::uint8_t { kRed, kGreen, kBlue, kCount };

constexpr EnumNames<Colour, 3> kColours{{
    {Colour::kRed, "red"},
    {Colour::kGreen, "green"},
    {Colour::kBlue, "blue"},
}};
constexpr EnumNames<Colour, 1> kColourAliases{{{Colour::kGreen, "verde"}}};

static_assert(in_enum_order(kColours, static_cast<std::size_t>(Colour::kCount)));
// A value left out, or two rows swapped, fails the check.
static_assert(!in_enum_order(EnumNames<Colour, 2>{{{Colour::kRed, "red"},
                                                   {Colour::kGreen, "green"}}},
                             static_cast<std::size_t>(Colour::kCount)));
static_assert(!in_enum_order(EnumNames<Colour, 3>{{{Colour::kRed, "red"},
                                                   {Colour::kBlue, "blue"},
                                                   {Colour::kGreen, "green"}}},
                             static_cast<std::size_t>(Colour::kCount)));
static_assert(std::string_view(name_of(kColours, Colour::kBlue)) == "blue");

enum class Code : int { kLow = -32700, kHigh = -32001 };  // not numbered from 0
constexpr EnumNames<Code, 2> kCodes{{{Code::kLow, "low"}, {Code::kHigh, "high"}}};

TEST(EnumNames, NamesEachValue) {
  EXPECT_STREQ(name_of(kColours, Colour::kRed), "red");
  EXPECT_STREQ(name_of(kColours, Colour::kGreen), "green");
  EXPECT_STREQ(name_of(kCodes, Code::kHigh), "high");
}

TEST(EnumNames, AValueWithoutANameGetsTheFallback) {
  EXPECT_STREQ(name_of(kColours, Colour::kCount), "unknown");
  EXPECT_STREQ(name_of(kColours, static_cast<Colour>(200), "red"), "red");
  EXPECT_STREQ(name_of(kCodes, static_cast<Code>(7)), "unknown");
}

TEST(EnumNames, ParsesNamesAndAliasesButNothingElse) {
  EXPECT_EQ(value_named(kColours, "blue"), Colour::kBlue);
  EXPECT_EQ(value_named(kColours, "verde", kColourAliases), Colour::kGreen);
  EXPECT_EQ(value_named(kColours, "verde"), std::nullopt) << "aliases only where given";
  EXPECT_EQ(value_named(kColours, "Blue"), std::nullopt) << "exact spelling";
  EXPECT_EQ(value_named(kColours, ""), std::nullopt);
  EXPECT_EQ(value_named(kCodes, "low"), Code::kLow);
  // An alias is never written: the name of its value is the table's.
  EXPECT_STREQ(name_of(kColours, *value_named(kColours, "verde", kColourAliases)), "green");
}

}  // namespace
}  // namespace xdpvhost::sys

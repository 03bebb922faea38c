#include "cgroup/psi.h"

#include <string>

#include "cgroupfs_fixtures.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

using testing::Contains;
const std::string& kRoot = testing::kCgroupfsFixtures;
CgroupLayout HybridLayout() { return testing::HybridFixtureLayout(); }
CgroupLayout V2Layout() { return testing::V2FixtureLayout(); }

TEST(PsiTest, ParsesSomeAndFull) {
  auto psi = ParsePsi(
      "some avg10=22.53 avg60=8.29 avg300=29.54 total=815871935\n"
      "full avg10=0.00 avg60=0.00 avg300=0.00 total=678\n",
      "cpu.pressure");
  ASSERT_TRUE(psi.ok()) << psi.status();
  EXPECT_EQ(psi->some_us, 815871935u);
  EXPECT_EQ(psi->full_us, 678u);
}

TEST(PsiTest, FullLineIsOptionalButZerosAreKept) {
  // cpu.pressure before Linux 5.13 has no "full" line.
  auto old = ParsePsi("some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\n", "cpu.pressure");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->some_us, 12345u);
  EXPECT_FALSE(old->full_us.has_value());

  auto zeros = ParsePsi(
      "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\n"
      "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
      "cpu.pressure");
  ASSERT_TRUE(zeros.ok()) << zeros.status();
  ASSERT_TRUE(zeros->full_us.has_value());
  EXPECT_EQ(*zeros->full_us, 0u);
}

TEST(PsiTest, TakesTheLinesInAnyOrderAndFullTotalsUpTo64Bits) {
  auto psi = ParsePsi(
      "full avg10=1.00 avg60=2.00 avg300=3.00 total=18446744073709551615\n"
      "some avg10=100.00 avg60=99.99 avg300=0.01 total=7\n",
      "memory.pressure");
  ASSERT_TRUE(psi.ok()) << psi.status();
  EXPECT_EQ(psi->some_us, 7u);
  EXPECT_EQ(psi->full_us, 18446744073709551615u);
}

TEST(PsiTest, MalformedFilesAreErrorsNamingFileAndLine) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"", "empty"},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=12", "truncated"},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=12\nfull avg10=0.00 avg60=0.00 avg3",
       "truncated"},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=12x\n", "line 1"},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=-1\n", "total value"},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=\n", "total value"},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=99999999999999999999\n", "total value"},
      {"some avg10=zero avg60=0.00 avg300=0.00 total=1\n", "avg10 value"},
      {"some avg10=0.00 avg60=0.00 total=1\n", "4 fields"},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=1 extra=2\n", "4 fields"},
      {"some avg10=0.00 avg300=0.00 avg60=0.00 total=1\n", "avg60"},
      {"some total=1 avg10=0.00 avg60=0.00 avg300=0.00\n", "field 2"},
      {"full avg10=0.00 avg60=0.00 avg300=0.00 total=1\n", "no \"some\" line"},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n\n", "line 2"},
      {"some avg10=0.00 avg60=0.00 avg300=0.00 total=1\nsome avg10=0.00 avg60=0.00 "
       "avg300=0.00 total=2\n",
       "second \"some\""},
      {"partial avg10=0.00 avg60=0.00 avg300=0.00 total=1\n", "\"some\" or \"full\""},
  };
  for (const Case& c : cases) {
    auto psi = ParsePsi(c.text, "/cg/cpu.pressure");
    ASSERT_FALSE(psi.ok()) << c.text;
    EXPECT_EQ(psi.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_TRUE(Contains(psi.status().message(), "/cg/cpu.pressure")) << psi.status();
    EXPECT_TRUE(Contains(psi.status().message(), c.says)) << psi.status();
  }
}

TEST(PsiTest, ReadsEachResourceOnAHybridHost) {
  // Copied from this machine's /sys/fs/cgroup/unified.
  auto cpu = ReadPsi(HybridLayout(), "/job", "cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->some_us, 846219699u);
  EXPECT_EQ(cpu->full_us, 0u);
  auto memory = ReadPsi(HybridLayout(), "/job", "memory");
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_EQ(memory->some_us, 16756u);
  EXPECT_EQ(memory->full_us, 3620u);
  auto io = ReadPsi(HybridLayout(), "/job", "io");
  ASSERT_TRUE(io.ok()) << io.status();
  EXPECT_EQ(io->some_us, 6809361u);
  EXPECT_EQ(io->full_us, 4925803u);
}

TEST(PsiTest, ReadsV2Host) {
  auto cpu = ReadPsi(V2Layout(), "/job", "cpu");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->some_us, 187262314u);
  EXPECT_EQ(cpu->full_us, 90127745u);
  auto old = ReadPsi(V2Layout(), "/nocpu", "cpu");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->some_us, 2641509u);
  EXPECT_FALSE(old->full_us.has_value());
}

TEST(PsiTest, BrokenFilesAreErrorsNamingThem) {
  for (const char* resource : {"cpu", "memory", "io"}) {
    auto psi = ReadPsi(V2Layout(), "/badpsi", resource);
    ASSERT_FALSE(psi.ok()) << resource;
    EXPECT_EQ(psi.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(psi.status().message(),
                         std::string("/v2/badpsi/") + resource + ".pressure: line 1"))
        << psi.status();
  }
  auto cut = ReadPsi(V2Layout(), "/cutpsi", "memory");
  ASSERT_FALSE(cut.ok());
  EXPECT_TRUE(Contains(cut.status().message(), "truncated")) << cut.status();
}

TEST(PsiTest, NoCgroup2IsNotFoundSayingSo) {
  CgroupLayout layout = HybridLayout();
  layout.v2_root.clear();
  auto psi = ReadPsi(layout, "/job", "cpu");
  ASSERT_FALSE(psi.ok());
  EXPECT_EQ(psi.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(psi.status().message(), "no cgroup2")) << psi.status();
}

TEST(PsiTest, MissingPressureFileIsNotFoundBlamingPsi) {
  auto psi = ReadPsi(HybridLayout(), "/nopsi", "memory");
  ASSERT_FALSE(psi.ok());
  EXPECT_EQ(psi.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(psi.status().message(), "/v1/unified/nopsi/memory.pressure"))
      << psi.status();
  EXPECT_TRUE(Contains(psi.status().message(), "CONFIG_PSI")) << psi.status();
  EXPECT_TRUE(Contains(psi.status().message(), "psi=0")) << psi.status();
}

TEST(PsiTest, MissingCgroupDirectoryIsNotFoundBlamingTheDirectory) {
  auto psi = ReadPsi(HybridLayout(), "/gone", "cpu");
  ASSERT_FALSE(psi.ok());
  EXPECT_EQ(psi.status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Contains(psi.status().message(), "/v1/unified/gone does not exist")) << psi.status();
}

TEST(PsiTest, UnknownResourceIsRejected) {
  auto psi = ReadPsi(HybridLayout(), "/job", "irq");
  ASSERT_FALSE(psi.ok());
  EXPECT_EQ(psi.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(psi.status().message(), "irq")) << psi.status();
}

}  // namespace
}  // namespace stagewatch

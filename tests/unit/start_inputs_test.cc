// Inputs checked before the agent starts (the Alertmanager URL: alertmanager_url_test.cc):
// files that must be regular and small, capability names.
#include <sys/stat.h>
#include <unistd.h>

#include "bounded_file.h"
#include "capabilities.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace stagewatch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BoundedFileTest, RefusesWhatIsNotASmallRegularFile) {
  char dir[] = "/tmp/stagewatch-bounded-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string fifo = std::string(dir) + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(std::string(ReadBoundedFile(fifo, "config file").status().message()),
              HasSubstr("is a FIFO (named pipe); give a regular file"));  // and no block
  EXPECT_THAT(std::string(ReadBoundedFile("/dev/zero", "config file").status().message()),
              HasSubstr("is a character device"));
  EXPECT_THAT(std::string(ReadBoundedFile(dir, "config file").status().message()),
              HasSubstr("is a directory"));
  const std::string file = std::string(dir) + "/f";
  FILE* f = fopen(file.c_str(), "w");
  fputs("0123456789", f);
  fclose(f);
  EXPECT_EQ(ReadBoundedFile(file, "x", 10).value_or(""), "0123456789");
  EXPECT_THAT(std::string(ReadBoundedFile(file, "x", 9).status().message()),
              HasSubstr("is 10 bytes, more than the 9 allowed"));
  EXPECT_EQ(ReadBoundedFile(std::string(dir) + "/none", "x").status().code(),
            absl::StatusCode::kNotFound);
  unlink(file.c_str());
  unlink(fifo.c_str());
  rmdir(dir);
}

TEST(CapabilityListTest, ParsesNamesCaseInsensitively) {
  EXPECT_THAT(ParseCapabilityList("").value(), ElementsAre());
  EXPECT_THAT(ParseCapabilityList("cap_net_bind_service, NET_RAW").value(), ElementsAre(10, 13));
  EXPECT_THAT(std::string(ParseCapabilityList("cap_bogus").status().message()),
              HasSubstr("unknown capability \"cap_bogus\""));
}

// --help and the docs give "none" as the default: it must be a value the flag takes.
TEST(CapabilityListTest, NoneKeepsNothingAndAllIsRefusedWithAReason) {
  EXPECT_THAT(ParseCapabilityList("none").value(), ElementsAre());
  EXPECT_THAT(ParseCapabilityList(" NONE ").value(), ElementsAre());
  EXPECT_THAT(std::string(ParseCapabilityList("all").status().message()),
              HasSubstr("would keep every capability"));
  EXPECT_THAT(std::string(ParseCapabilityList("cap_net_raw,all").status().message()),
              HasSubstr("would keep every capability"));
  EXPECT_THAT(std::string(ParseCapabilityList("none,cap_net_raw").status().message()),
              HasSubstr("\"none\" stands alone"));
}

}  // namespace
}  // namespace stagewatch

// /metrics is written into a buffer kept between scrapes: the second scrape writes into the
// room the first one's text took, and the text sent is the one written.
#include "exporters/http/exposition_buffers.h"

#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "exporters/http/http_server.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace stagewatch::exporters {
namespace {

TEST(ExpositionBuffersTest, ABufferGivenBackIsTakenAgainEmptyWithItsRoom) {
  ExpositionBuffers buffers(1);
  std::unique_ptr<std::string> first = buffers.Take();
  first->assign(100000, 'x');
  const size_t room = first->capacity();
  buffers.Give(std::move(first));
  EXPECT_EQ(buffers.kept(), 1u);
  std::unique_ptr<std::string> again = buffers.Take();
  EXPECT_TRUE(again->empty());
  EXPECT_EQ(again->capacity(), room);
  // Beyond `kept`, a buffer given back is freed, not kept.
  std::unique_ptr<std::string> other = buffers.Take();
  buffers.Give(std::move(again));
  buffers.Give(std::move(other));
  EXPECT_EQ(buffers.kept(), 1u);
}

// After a scrape far larger than the ones since (a churn's peak), the buffer kept is cut back
// to the room the last exposition took and an eighth; within half again, it is kept as is.
TEST(ExpositionBuffersTest, ABufferGrownFarPastItsExpositionIsKeptWithThatExpositionsRoom) {
  ExpositionBuffers buffers(1);
  std::unique_ptr<std::string> peak = buffers.Take();
  peak->assign(8 << 20, 'x');
  buffers.Give(std::move(peak));
  std::unique_ptr<std::string> after = buffers.Take();
  ASSERT_GE(after->capacity(), size_t{8} << 20);
  after->assign(2 << 20, 'y');
  buffers.Give(std::move(after));
  EXPECT_GE(buffers.kept_capacity(), size_t{2} << 20);
  EXPECT_LE(buffers.kept_capacity(), (size_t{2} << 20) + (size_t{2} << 20) / 8 + 64);

  std::unique_ptr<std::string> steady = buffers.Take();
  const size_t room = steady->capacity();
  steady->assign(room * 3 / 4, 'z');  // within half again its room: no new buffer
  buffers.Give(std::move(steady));
  EXPECT_EQ(buffers.kept_capacity(), room);
}

TEST(ExpositionBuffersTest, TheServerWritesEachScrapeIntoTheBufferThePreviousOneFilled) {
  std::vector<size_t> room_at_start;
  HttpServerOptions options;
  options.listen_address = "127.0.0.1:0";
  int scrape = 0;
  options.render_metrics = [&](std::string* out) {
    room_at_start.push_back(out->capacity());
    EXPECT_TRUE(out->empty());
    out->append(200000 + scrape++, 'a').append("\n");
  };
  options.ready = [] { return true; };
  // One worker: its scrapes take turns, and each finds the buffer the one before gave back.
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(std::move(options), HttpLimits{.worker_threads = 1});
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = (*server)->address();
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(address.substr(address.rfind(':') + 1), &port));
  httplib::Client client("127.0.0.1", port);
  for (int i = 0; i < 3; i++) {
    httplib::Result res = client.Get("/metrics");
    ASSERT_TRUE(res) << i;
    EXPECT_EQ(res->body.size(), 200001u + i);
  }
  ASSERT_EQ(room_at_start.size(), 3u);
  EXPECT_LT(room_at_start[0], 200000u);
  EXPECT_GE(room_at_start[1], 200001u);  // the first scrape's room, kept
  EXPECT_GE(room_at_start[2], 200002u);
}

}  // namespace
}  // namespace stagewatch::exporters

// The buffers /metrics answers are written into, kept between scrapes: a scrape writes its
// exposition into a buffer that already has the room (a megabyte or more at thousands of
// cgroups), and libmicrohttpd sends it from there, without a copy, giving it back when sent.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace stagewatch::exporters {

// Thread-safe: each scrape (one per worker thread at a time) takes a buffer and gives it back
// when its answer is sent. At most `kept` buffers are kept; one more scrape at once gets a new
// buffer that is freed when sent. A buffer given back with more than half again the room its
// exposition took is kept with that exposition's room and an eighth instead.
class ExpositionBuffers {
 public:
  explicit ExpositionBuffers(size_t kept) : kept_(kept) {}

  // Below this much spare room a buffer is kept as it is.
  static constexpr size_t kShrinkFloor = 64 << 10;

  // A buffer, empty, with the capacity it had when given back.
  std::unique_ptr<std::string> Take();
  void Give(std::unique_ptr<std::string> buffer);

  // Buffers kept now, and their capacity in bytes (for tests).
  size_t kept() const;
  size_t kept_capacity() const;

 private:
  const size_t kept_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<std::string>> free_;
};

}  // namespace stagewatch::exporters

#include "exporters/http/exposition_buffers.h"

#include <utility>

namespace stagewatch::exporters {

std::unique_ptr<std::string> ExpositionBuffers::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.empty()) return std::make_unique<std::string>();
  std::unique_ptr<std::string> buffer = std::move(free_.back());
  free_.pop_back();
  buffer->clear();  // keeps its capacity
  return buffer;
}

void ExpositionBuffers::Give(std::unique_ptr<std::string> buffer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.size() < kept_) free_.push_back(std::move(buffer));
}

size_t ExpositionBuffers::kept() const {
  std::lock_guard<std::mutex> lock(mu_);
  return free_.size();
}

size_t ExpositionBuffers::kept_capacity() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t bytes = 0;
  for (const auto& b : free_) bytes += b->capacity();
  return bytes;
}

}  // namespace stagewatch::exporters

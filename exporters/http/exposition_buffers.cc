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
  // Grown well past the exposition it holds (a churn's peak, since gone): the pages of its
  // unused tail were written once and would stay resident for good. A new buffer with the
  // room of this exposition and an eighth takes its place, untouched until written.
  const size_t used = buffer->size();
  if (buffer->capacity() > used + used / 2 + kShrinkFloor) {
    auto smaller = std::make_unique<std::string>();
    smaller->reserve(used + used / 8);
    buffer = std::move(smaller);
  }
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

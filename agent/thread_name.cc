#include "thread_name.h"

#include <pthread.h>

#include <string>

namespace stagewatch {

void NameThisThread(std::string_view name) {
  constexpr size_t kMaxName = 15;  // TASK_COMM_LEN less the terminating zero
  const std::string kept(name.substr(0, kMaxName));
  pthread_setname_np(pthread_self(), kept.c_str());
}

}  // namespace stagewatch

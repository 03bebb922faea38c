// A wrong-password flood against the agent's TLS + basic auth endpoint, and one scraper beside
// it (bench/auth_flood.sh drives it). The scraper logs in once before the flood, then scrapes
// every 100 ms over one keep-alive connection, as Prometheus does; each flooder sends a new
// wrong password per request, in a loop. Prints one line: the scraper's latencies and the
// flood's answers.
//
//   auth_flood PORT USER PASSWORD FLOODERS SECONDS
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "httplib.h"

namespace {

using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s PORT USER PASSWORD FLOODERS SECONDS\n", argv[0]);
    return 2;
  }
  const int port = std::stoi(argv[1]);
  const std::string user = argv[2], password = argv[3];
  const int flooders = std::stoi(argv[4]);
  const auto duration = std::chrono::seconds(std::stoi(argv[5]));

  httplib::SSLClient scraper("127.0.0.1", port);
  scraper.enable_server_certificate_verification(false);
  scraper.set_basic_auth(user, password);
  scraper.set_read_timeout(10);
  scraper.set_tcp_nodelay(true);  // as Prometheus' Go client
  httplib::Result first = scraper.Get("/metrics");
  if (!first || first->status != 200) {
    std::fprintf(stderr, "auth_flood: the scraper cannot log in\n");
    return 1;
  }

  std::atomic<bool> stop = false;
  std::atomic<long> unauthorized = 0, throttled = 0, failed = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < flooders; t++) {
    threads.emplace_back([&, t] {
      httplib::SSLClient client("127.0.0.1", port);
      client.enable_server_certificate_verification(false);
      client.set_read_timeout(10);
      for (long i = 0; !stop; i++) {
        client.set_basic_auth(user, "wrong-" + std::to_string(t) + "-" + std::to_string(i));
        httplib::Result r = client.Get("/metrics");
        if (!r) {
          failed++;
        } else if (r->status == 429) {
          throttled++;
        } else {
          unauthorized += r->status == 401;
        }
      }
    });
  }
  std::vector<double> ms;
  int timeouts = 0;
  const Clock::time_point end = Clock::now() + duration;
  while (Clock::now() < end) {
    const Clock::time_point t0 = Clock::now();
    httplib::Result r = scraper.Get("/metrics");
    const double took = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!r || r->status != 200) {
      timeouts++;
    } else {
      ms.push_back(took);
    }
    std::this_thread::sleep_until(t0 + std::chrono::milliseconds(100));
  }
  stop = true;
  for (std::thread& t : threads) t.join();
  std::printf("flooders=%d scrapes=%zu failed_scrapes=%d p50_ms=%.1f p99_ms=%.1f max_ms=%.1f "
              "flood_401=%ld flood_429=%ld flood_no_answer=%ld\n",
              flooders, ms.size() + timeouts, timeouts, Percentile(ms, 0.5),
              Percentile(ms, 0.99), ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end()),
              unauthorized.load(), throttled.load(), failed.load());
  return 0;
}

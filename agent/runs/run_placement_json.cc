#include "runs/run_placement_json.h"

#include <string>

#include "absl/strings/numbers.h"

namespace stagewatch {

using nlohmann::json;

namespace {
// A node's key: its id as text (JSON keys are strings).
bool NodeOf(const std::string& key, int& node) { return absl::SimpleAtoi(key, &node); }
}  // namespace

json MemoryByNodeJson(const NumaMemory& memory) {
  json out = json::object();
  for (const auto& [node, m] : memory) {
    out[std::to_string(node)] = {{"anon_bytes", m.anon_bytes}, {"file_bytes", m.file_bytes}};
  }
  return out;
}

NumaMemory MemoryByNodeFrom(const json& j) {
  NumaMemory out;
  if (!j.is_object()) return out;
  for (const auto& [key, v] : j.items()) {
    int node = 0;
    if (!NodeOf(key, node) || !v.is_object()) continue;
    out[node] = {v.value("anon_bytes", uint64_t{0}), v.value("file_bytes", uint64_t{0})};
  }
  return out;
}

json AgentPlacementJson(const AgentFacts& a) {
  json out = json::object();
  if (a.node_migrations) out["node_migrations"] = *a.node_migrations;
  if (a.cross_node_migrations) out["cross_node_migrations"] = *a.cross_node_migrations;
  if (!a.cpu_seconds_by_node.empty()) {
    json by_node = json::object();
    for (const auto& [node, seconds] : a.cpu_seconds_by_node) {
      by_node[std::to_string(node)] = seconds;
    }
    out["cpu_seconds_by_node"] = by_node;
  }
  return out.empty() ? json(nullptr) : out;
}

void AgentPlacementFrom(const json& j, AgentFacts& a) {
  if (!j.is_object()) return;
  if (auto v = j.find("node_migrations"); v != j.end() && v->is_number_unsigned()) {
    a.node_migrations = v->get<uint64_t>();
  }
  if (auto v = j.find("cross_node_migrations"); v != j.end() && v->is_number_unsigned()) {
    a.cross_node_migrations = v->get<uint64_t>();
  }
  if (auto by_node = j.find("cpu_seconds_by_node"); by_node != j.end() && by_node->is_object()) {
    for (const auto& [key, v] : by_node->items()) {
      int node = 0;
      if (NodeOf(key, node) && v.is_number()) a.cpu_seconds_by_node[node] = v.get<double>();
    }
  }
}

}  // namespace stagewatch

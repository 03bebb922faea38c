// The `anomalies:` section: each detector's switch, windows and thresholds.
#include "config/config_sections.h"

namespace stagewatch::config_internal {
namespace {

// A baseline's half-life: at least this, so that it remembers more than the last sample.
constexpr absl::Duration kMinHalfLife = absl::Seconds(1);

// min_level: major faults per second, or p99 run-queue latency in seconds. trim_fraction only
// where the input is a counter: a gauge's median has nothing to trim.
void ParseRateBaseline(ConfigReader& r, const ConfigValue& v, const std::string& name,
                       RateBaselineConfig& rate) {
  std::vector<ConfigField> fields = {
      {"enabled", [&](const ConfigValue& f) { r.ReadBool(f, rate.enabled); }},
      {"window", [&](const ConfigValue& f) { r.ReadDuration(f, rate.window); }},
      {"baseline_half_life",
       [&](const ConfigValue& f) { r.ReadDuration(f, rate.baseline_half_life, kMinHalfLife); }},
      {"warmup", [&](const ConfigValue& f) { r.ReadDuration(f, rate.warmup); }},
      {"k", [&](const ConfigValue& f) { r.ReadPositive(f, rate.k); }},
      {"min_level", [&](const ConfigValue& f) { r.ReadPositive(f, rate.min_level); }},
      {"clear_hold", [&](const ConfigValue& f) { r.ReadDuration(f, rate.clear_hold); }},
  };
  if (rate.input == RateInput::kCounter) {
    fields.push_back(
        {"trim_fraction", [&](const ConfigValue& f) { r.ReadShare(f, rate.trim_fraction); }});
  }
  r.ParseMap(v, " in anomalies." + name, fields);
}

void ParseMemoryClimb(ConfigReader& r, const ConfigValue& v, MemoryClimbConfig& c) {
  r.ParseMap(v, " in anomalies.memory_climb", {
      {"enabled", [&](const ConfigValue& f) { r.ReadBool(f, c.enabled); }},
      {"window", [&](const ConfigValue& f) { r.ReadDuration(f, c.window); }},
      {"baseline_half_life",
       [&](const ConfigValue& f) { r.ReadDuration(f, c.baseline_half_life, kMinHalfLife); }},
      {"warmup", [&](const ConfigValue& f) { r.ReadDuration(f, c.warmup); }},
      {"k", [&](const ConfigValue& f) { r.ReadPositive(f, c.k); }},
      {"min_growth_bytes", [&](const ConfigValue& f) { r.ReadPositive(f, c.min_growth_bytes); }},
      {"clear_hold", [&](const ConfigValue& f) { r.ReadDuration(f, c.clear_hold); }},
  });
}

void ParseLimitEta(ConfigReader& r, const ConfigValue& v, LimitEtaConfig& c) {
  r.ParseMap(v, " in anomalies.limit_eta", {
      {"enabled", [&](const ConfigValue& f) { r.ReadBool(f, c.enabled); }},
      {"window", [&](const ConfigValue& f) { r.ReadDuration(f, c.window); }},
      {"warmup", [&](const ConfigValue& f) { r.ReadDuration(f, c.warmup); }},
      {"min_points", [&](const ConfigValue& f) {
         int points = static_cast<int>(c.min_points);
         r.ReadInt(f, 2, 100000, points);  // a line needs two
         c.min_points = static_cast<size_t>(points);
       }},
      {"min_span", [&](const ConfigValue& f) { r.ReadDuration(f, c.min_span); }},
      {"threshold", [&](const ConfigValue& f) { r.ReadDuration(f, c.threshold); }},
      {"min_usage_fraction",
       [&](const ConfigValue& f) { r.ReadFraction(f, c.min_usage_fraction); }},
      {"max_release_fraction",
       [&](const ConfigValue& f) { r.ReadFraction(f, c.max_release_fraction); }},
      {"min_recent_growth_ratio",
       [&](const ConfigValue& f) { r.ReadPositive(f, c.min_recent_growth_ratio); }},
      {"clear_hold", [&](const ConfigValue& f) { r.ReadDuration(f, c.clear_hold); }},
      {"above_usual_ratio",
       [&](const ConfigValue& f) { r.ReadPositive(f, c.above_usual_ratio); }},
      {"short_warmup", [&](const ConfigValue& f) { r.ReadDuration(f, c.short_warmup); }},
      {"short_warmup_usage_fraction",
       [&](const ConfigValue& f) { r.ReadFraction(f, c.short_warmup_usage_fraction); }},
  });
}

void ParseSlowRun(ConfigReader& r, const ConfigValue& v, SlowRunConfig& c) {
  r.ParseMap(v, " in anomalies.slow_run", {
      {"enabled", [&](const ConfigValue& f) { r.ReadBool(f, c.enabled); }},
      {"min_ratio", [&](const ConfigValue& f) { r.ReadPositive(f, c.min_ratio); }},
  });
}

void ParsePressureSpike(ConfigReader& r, const ConfigValue& v, PressureSpikeConfig& c) {
  r.ParseMap(v, " in anomalies.pressure_spike", {
      {"enabled", [&](const ConfigValue& f) { r.ReadBool(f, c.enabled); }},
      {"window", [&](const ConfigValue& f) { r.ReadDuration(f, c.window); }},
      {"threshold", [&](const ConfigValue& f) { r.ReadFraction(f, c.threshold); }},
      {"sustain", [&](const ConfigValue& f) { r.ReadDuration(f, c.sustain); }},
      {"clear_ratio", [&](const ConfigValue& f) { r.ReadFraction(f, c.clear_ratio); }},
  });
}

}  // namespace

void ParseAnomalies(ConfigReader& r, const ConfigValue& section, AnomalyConfig& a) {
  r.ParseMap(section, " in anomalies", {
      {"memory_climb", [&](const ConfigValue& v) { ParseMemoryClimb(r, v, a.memory_climb); }},
      {"limit_eta", [&](const ConfigValue& v) { ParseLimitEta(r, v, a.limit_eta); }},
      {"pressure_spike",
       [&](const ConfigValue& v) { ParsePressureSpike(r, v, a.pressure_spike); }},
      {"fault_storm",
       [&](const ConfigValue& v) { ParseRateBaseline(r, v, "fault_storm", a.fault_storm); }},
      {"cpu_starvation", [&](const ConfigValue& v) {
         ParseRateBaseline(r, v, "cpu_starvation", a.cpu_starvation);
       }},
      {"slow_run", [&](const ConfigValue& v) { ParseSlowRun(r, v, a.slow_run); }},
      {"oom_kill", [&](const ConfigValue& v) {
         r.ParseMap(v, " in anomalies.oom_kill", {
             {"enabled", [&](const ConfigValue& f) { r.ReadBool(f, a.oom_kill); }},
             {"hold", [&](const ConfigValue& f) { r.ReadDuration(f, a.oom_kill_hold); }},
         });
       }},
  });
}

}  // namespace stagewatch::config_internal

// The `alerting:` section: the Alertmanagers the agent pages directly, and how it reaches them.
#include "config/config_sections.h"
#include "config/config_validate.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace stagewatch::config_internal {
namespace {

void ParseBasicAuth(ConfigReader& r, const ConfigValue& v, AlertingConfig& a) {
  r.ParseMap(v, " in alerting.basic_auth", {
      {"username", [&](const ConfigValue& f) { r.ReadString(f, a.basic_auth_username); }},
      {"password", [&](const ConfigValue& f) { r.ReadString(f, a.basic_auth_password); }},
      {"password_file", [&](const ConfigValue& f) {
         r.ReadChecked(f, a.basic_auth_password_file, CheckAbsolutePath);
       }},
  });
  if (!a.basic_auth_password.empty() && !a.basic_auth_password_file.empty()) {
    r.Problem(v.mark, "alerting.basic_auth: set password or password_file, not both");
  }
}

void ParseTls(ConfigReader& r, const ConfigValue& v, AlertingConfig& a) {
  r.ParseMap(v, " in alerting.tls", {
      {"ca_file",
       [&](const ConfigValue& f) { r.ReadChecked(f, a.tls_ca_file, CheckAbsolutePath); }},
      {"cert_file",
       [&](const ConfigValue& f) { r.ReadChecked(f, a.tls_cert_file, CheckAbsolutePath); }},
      {"key_file",
       [&](const ConfigValue& f) { r.ReadChecked(f, a.tls_key_file, CheckAbsolutePath); }},
      {"insecure_skip_verify",
       [&](const ConfigValue& f) { r.ReadBool(f, a.tls_insecure_skip_verify); }},
      {"min_version",
       [&](const ConfigValue& f) { r.ReadChecked(f, a.tls_min_version, CheckTlsMinVersion); }},
  });
  if (a.tls_cert_file.empty() != a.tls_key_file.empty()) {
    r.Problem(v.mark, "alerting.tls: cert_file and key_file must be set together");
  }
}

// A map of label names to values; a name that is not a label name, or is the page's own
// (alertname), is an error at its position.
void ParseLabels(ConfigReader& r, const ConfigValue& v, AlertingConfig& a) {
  if (v.node.IsNull()) return;
  if (!v.node.IsMap()) {
    r.Problem(v.mark, "alerting.labels must be a map of label names to values, e.g. "
                      "{instance: node-1, cluster: eu-1}");
    return;
  }
  for (const auto& entry : v.node) {
    const std::string name = entry.first.Scalar();
    if (absl::Status s = CheckLabelName(name); !s.ok()) {
      r.Problem(entry.first.Mark(), absl::StrCat("alerting.labels: ", s.message()));
    } else if (name == "alertname") {
      r.Problem(entry.first.Mark(), "alerting.labels: alertname is each page's own name");
    } else if (!entry.second.IsScalar()) {
      r.Problem(entry.second.Mark(),
                absl::StrCat("alerting.labels.", name, " must be a string"));
    } else {
      a.labels[name] = entry.second.Scalar();
    }
  }
}

}  // namespace

void ParseAlerting(ConfigReader& r, const ConfigValue& section, AlertingConfig& a) {
  r.ParseMap(section, " in alerting", {
      {"alertmanagers", [&](const ConfigValue& v) {
         r.ReadStringList(v, a.alertmanagers, CheckAlertmanagerUrl);
       }},
      {"basic_auth", [&](const ConfigValue& v) { ParseBasicAuth(r, v, a); }},
      {"tls", [&](const ConfigValue& v) { ParseTls(r, v, a); }},
      {"bearer_token", [&](const ConfigValue& v) { r.ReadString(v, a.bearer_token); }},
      {"timeout", [&](const ConfigValue& v) { r.ReadDuration(v, a.timeout); }},
      {"resend_interval", [&](const ConfigValue& v) { r.ReadDuration(v, a.resend_interval); }},
      {"runbook_url_base", [&](const ConfigValue& v) {
         if (r.ReadString(v, a.runbook_url_base)) {
           while (absl::EndsWith(a.runbook_url_base, "/")) a.runbook_url_base.pop_back();
         }
       }},
      {"labels", [&](const ConfigValue& v) { ParseLabels(r, v, a); }},
  });
}

}  // namespace stagewatch::config_internal

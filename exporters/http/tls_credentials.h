// The endpoint's TLS credentials (certificate, key, client CAs) as GnuTLS holds them, read from
// the files the web configuration names. Each connection is handed the credentials current
// when it starts and keeps them until it closes, so a rotation never pulls them from under a
// handshake.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "exporters/http/web_config.h"

struct gnutls_certificate_credentials_st;

namespace stagewatch::exporters {

using TlsCredentials = std::shared_ptr<gnutls_certificate_credentials_st>;

// Reads and checks the files: each readable, the certificate PEM, the key unencrypted and
// matching the certificate, the client CA file (when client certificates are verified) holding
// at least one certificate. The error names the file and says what is wrong.
absl::StatusOr<TlsCredentials> LoadTlsCredentials(const WebTlsConfig& tls);

}  // namespace stagewatch::exporters

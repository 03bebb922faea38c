#include "exporters/http/tls_credentials.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "absl/strings/str_cat.h"
#include "bounded_file.h"

namespace stagewatch::exporters {
namespace {

gnutls_datum_t Datum(const std::string& text) {
  return {reinterpret_cast<unsigned char*>(const_cast<char*>(text.data())),
          static_cast<unsigned int>(text.size())};
}

}  // namespace

absl::StatusOr<TlsCredentials> LoadTlsCredentials(const WebTlsConfig& tls) {
  absl::StatusOr<std::string> cert = ReadBoundedFile(tls.cert_file, "TLS certificate (cert_file)");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadBoundedFile(tls.key_file, "TLS key (key_file)");
  if (!key.ok()) return key.status();
  std::string client_ca;
  if (tls.client_auth != ClientAuth::kNoClientCert && !tls.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca =
        ReadBoundedFile(tls.client_ca_file, "client CA file (client_ca_file)");
    if (!ca.ok()) return ca.status();
    client_ca = *std::move(ca);
  }

  gnutls_certificate_credentials_t raw = nullptr;
  if (int rc = gnutls_certificate_allocate_credentials(&raw); rc < 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate TLS credentials: ", gnutls_strerror(rc)));
  }
  TlsCredentials credentials(raw, gnutls_certificate_free_credentials);
  const gnutls_datum_t cert_pem = Datum(*cert), key_pem = Datum(*key);
  // GnuTLS checks that the key belongs to the certificate (a half-rotated pair fails here).
  if (int rc = gnutls_certificate_set_x509_key_mem2(raw, &cert_pem, &key_pem,
                                                    GNUTLS_X509_FMT_PEM, nullptr, 0);
      rc < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot use ", tls.cert_file, " with ", tls.key_file, ": ", gnutls_strerror(rc),
        "; cert_file must be a PEM certificate and key_file its unencrypted private key"));
  }
  if (!client_ca.empty()) {
    const gnutls_datum_t ca_pem = Datum(client_ca);
    if (gnutls_certificate_set_x509_trust_mem(raw, &ca_pem, GNUTLS_X509_FMT_PEM) <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "client_ca_file ", tls.client_ca_file, " holds no PEM certificate"));
    }
  }
  return credentials;
}

}  // namespace stagewatch::exporters

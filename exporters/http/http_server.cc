#include "exporters/http/http_server.h"

#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <optional>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "bounded_file.h"
#include "exporters/http/auth_gate.h"
#include "exporters/http/exposition_buffers.h"
#include "exporters/http/web_config_watch.h"
#include "listen_address.h"
#include "log.h"
#include "version.h"

namespace stagewatch::exporters {
namespace {

constexpr const char* kExpositionContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string LandingPage(const std::string& telemetry_path) {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html><head><title>stagewatch</title></head><body>\n"
      "<h1>stagewatch</h1>\n<p>Per-pipeline-stage OOM kills, memory and CPU contention, "
      "traced with eBPF.</p>\n<p><a href=\"", telemetry_path,
      "\">Metrics</a> · <a href=\"/runs\">Runs</a></p>\n",
      "<p>Version ", kVersion, " (", kRevision, ")</p>\n</body></html>\n");
}

// A listening socket with SO_REUSEADDR (a restart binds at once, even with connections of the
// previous run in TIME_WAIT) but not SO_REUSEPORT (a second agent on the port is refused),
// and the kernel's full backlog.
absl::StatusOr<int> Listen(const ListenAddress& a, std::string* bound) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  const std::string port = std::to_string(a.port);
  if (int rc = getaddrinfo(a.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot resolve listen host \"", a.host,
                                                   "\": ", gai_strerror(rc)));
  }
  const int fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, res->ai_protocol);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (res->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) err = errno;
  }
  freeaddrinfo(res);
  if (err != 0) {
    if (fd >= 0) close(fd);
    const std::string hint =
        err == EADDRINUSE    ? "; another process listens there: stop it or pick another "
                               "address with --web.listen-address"
        : err == EACCES      ? "; ports below 1024 need CAP_NET_BIND_SERVICE"
        : err == EADDRNOTAVAIL ? "; no interface of this host has that address"
                               : "";
    return absl::UnavailableError(absl::StrCat("cannot listen on ", a.host, ":", a.port, ": ",
                                               strerror(err), hint));
  }
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  char host[INET6_ADDRSTRLEN] = {};
  int real_port = 0;
  if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    real_port = ntohs(in6->sin6_port);
    *bound = absl::StrCat("[", host, "]:", real_port);
  } else {
    const auto* in4 = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &in4->sin_addr, host, sizeof(host));
    real_port = ntohs(in4->sin_port);
    *bound = absl::StrCat(host, ":", real_port);
  }
  return fd;
}

// GnuTLS priorities for the versions from min to max (TLS10 .. TLS13).
std::string TlsPriorities(const WebTlsConfig& tls) {
  const std::vector<std::pair<std::string, std::string>> versions = {
      {"TLS10", "+VERS-TLS1.0"}, {"TLS11", "+VERS-TLS1.1"},
      {"TLS12", "+VERS-TLS1.2"}, {"TLS13", "+VERS-TLS1.3"}};
  std::string out = "NORMAL:-VERS-ALL";
  bool in_range = false;
  for (const auto& [name, priority] : versions) {
    if (name == tls.min_version) in_range = true;
    if (in_range) absl::StrAppend(&out, ":", priority);
    if (name == tls.max_version) break;
  }
  return out;
}

bool RequiresClientCert(ClientAuth a) {
  return a == ClientAuth::kRequireAnyClientCert || a == ClientAuth::kRequireAndVerifyClientCert;
}
bool VerifiesClientCert(ClientAuth a) {
  return a == ClientAuth::kVerifyClientCertIfGiven || a == ClientAuth::kRequireAndVerifyClientCert;
}

// Whether the TLS client's certificate satisfies the configured client_auth_type.
bool ClientCertAccepted(MHD_Connection* connection, ClientAuth auth) {
  if (!RequiresClientCert(auth) && !VerifiesClientCert(auth)) return true;
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (info == nullptr || info->tls_session == nullptr) return false;
  auto session = static_cast<gnutls_session_t>(info->tls_session);
  unsigned int count = 0;
  const bool given = gnutls_certificate_get_peers(session, &count) != nullptr && count > 0;
  if (!given) return !RequiresClientCert(auth);
  if (!VerifiesClientCert(auth)) return true;
  unsigned int status = 0;
  return gnutls_certificate_verify_peers2(session, &status) == GNUTLS_E_SUCCESS && status == 0;
}

MHD_Result Reply(MHD_Connection* connection, unsigned int status, const std::string& body,
                 const char* content_type,
                 const std::vector<std::pair<const char*, const char*>>& headers = {}) {
  MHD_Response* response = MHD_create_response_from_buffer(
      body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  for (const auto& [name, value] : headers) MHD_add_response_header(response, name, value);
  const MHD_Result queued = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return queued;
}

// Makes room for the connection limit: a few thousand descriptors, where the hard limit allows.
int RaiseFileLimit(int wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return wanted;
  const rlim_t need = static_cast<rlim_t>(wanted) + 256;  // BPF maps, cgroupfs reads, logs
  if (limit.rlim_cur < need && limit.rlim_max > limit.rlim_cur) {
    limit.rlim_cur = std::min(need, limit.rlim_max);
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur < need) return std::max(16, static_cast<int>(limit.rlim_cur) - 256);
  return wanted;
}

MHD_Result CollectArgument(void* cls, MHD_ValueKind, const char* key, const char* value) {
  (*static_cast<std::map<std::string, std::string>*>(cls))[key] = value == nullptr ? "" : value;
  return MHD_YES;
}

// The extra handler for `path`: an exact match, or the longest prefix ending in '/'.
const ExtraHandler* FindHandler(const std::vector<ExtraHandler>& handlers,
                                const std::string& path) {
  const ExtraHandler* best = nullptr;
  for (const ExtraHandler& h : handlers) {
    const bool match = h.path == path || (!h.path.empty() && h.path.back() == '/' &&
                                          path.compare(0, h.path.size(), h.path) == 0);
    if (match && (best == nullptr || h.path.size() > best->path.size())) best = &h;
  }
  return best;
}

// What the server keeps of one request, from its first line to its completion.
struct RequestState {
  size_t query_parameters = 0;
  bool waiting = false;  // suspended until the auth gate answers
  std::optional<AuthOutcome> auth;  // set by the gate's thread before it resumes the request
};

// The number of parameters in a request target's query ("a=1&b=2" has two).
size_t CountQueryParameters(std::string_view target) {
  const size_t mark = target.find('?');
  if (mark == std::string_view::npos) return 0;
  size_t n = 0;
  bool in_part = false;
  for (char c : target.substr(mark + 1)) {
    n += !in_part && c != '&';
    in_part = c != '&';
  }
  return n;
}

}  // namespace

struct HttpServer::Handler {
  HttpServerOptions options;
  HttpLimits limits;
  // One kept: a Prometheus scrapes one at a time, and scrapes at once (an HA pair) get a buffer
  // freed when sent. One per worker kept up to four 8 MiB buffers at 10,000 cgroups.
  ExpositionBuffers expositions;
  std::string landing;
  AuthGate auth;
  ClientAuth client_auth = ClientAuth::kNoClientCert;  // kept on reloads: needs a restart
  std::unique_ptr<WebConfigWatch> web;

  absl::Mutex log_mu;
  std::string last_log;  // libmicrohttpd's last message, for a start-up error

  Handler(HttpServerOptions o, HttpLimits l)
      : options(std::move(o)),
        limits(l),
        expositions(1),
        landing(LandingPage(options.telemetry_path)),
        auth(BasicAuthUsers(options.web.basic_auth_users)),
        client_auth(options.web.tls ? options.web.tls->client_auth : ClientAuth::kNoClientCert) {}

  static void OnLog(void* cls, const char* format, va_list ap) {
    char text[512];
    vsnprintf(text, sizeof(text), format, ap);
    std::string message(text);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    auto* self = static_cast<Handler*>(cls);
    {
      absl::MutexLock lock(&self->log_mu);
      self->last_log = message;
    }
    // Clients that hang up or send garbage are routine on an open port: debug, not warn.
    Log::Debug("http", {{"msg", message}});
  }

  // A request's first line is in, before libmicrohttpd parses its query: the request's state
  // starts here. libmicrohttpd keeps every query parameter in the connection's memory pool, so
  // a thousand of them fill it and leave no room for an answer: the connection would just
  // close. Beyond the limit the query is cut here, in the connection's own buffer, before it
  // is parsed (libmicrohttpd has found the '?' already and parses what follows it), and the
  // request is answered 414.
  static void* OnRequestLine(void* cls, const char* target, MHD_Connection*) {
    auto* state = new RequestState;
    state->query_parameters = CountQueryParameters(target);
    if (state->query_parameters > static_cast<Handler*>(cls)->limits.max_query_parameters) {
      char* mark = const_cast<char*>(strchr(target, '?'));
      mark[1] = '\0';
    }
    return state;
  }

  // A connection starts, before its TLS handshake: it gets the credentials current now, and
  // holds them until it closes (GnuTLS keeps a pointer, not a copy). Plain connections look
  // too, so that basic auth users change without TLS.
  static void OnConnection(void* cls, MHD_Connection* connection, void** socket_context,
                           MHD_ConnectionNotificationCode code) {
    using Held = std::shared_ptr<const LiveWebConfig>;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
      delete static_cast<Held*>(*socket_context);
      *socket_context = nullptr;
      return;
    }
    Held live = static_cast<Handler*>(cls)->web->Current();
    if (live->tls == nullptr) return;
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (info == nullptr || info->tls_session == nullptr) return;
    gnutls_credentials_set(static_cast<gnutls_session_t>(info->tls_session),
                           GNUTLS_CRD_CERTIFICATE, live->tls.get());
    *socket_context = new Held(std::move(live));
  }

  static void OnCompleted(void*, MHD_Connection*, void** request_state,
                          MHD_RequestTerminationCode) {
    delete static_cast<RequestState*>(*request_state);
    *request_state = nullptr;
  }

  // Called once per request as soon as its headers are in, again when a request the auth gate
  // suspended is resumed, and for each body chunk, which is never read (the connection closes).
  static MHD_Result OnRequest(void* cls, MHD_Connection* connection, const char* url,
                              const char* method, const char*, const char*,
                              size_t* upload_data_size, void** request_state) {
    auto* self = static_cast<Handler*>(cls);
    auto* state = static_cast<RequestState*>(*request_state);
    if (state == nullptr || *upload_data_size != 0) return MHD_NO;
    if (state->waiting) return self->Route(connection, url, *state->auth);
    return self->Answer(connection, url, method, *state);
  }

  MHD_Result Answer(MHD_Connection* connection, const std::string& path,
                    const std::string& method, RequestState& state) {
    const char* text = "text/plain; charset=utf-8";
    if (method != MHD_HTTP_METHOD_GET && method != MHD_HTTP_METHOD_HEAD) {
      return Reply(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "Only GET and HEAD are served.\n",
                   text, {{MHD_HTTP_HEADER_ALLOW, "GET, HEAD"}, {"Connection", "close"}});
    }
    if (!ClientCertAccepted(connection, client_auth)) {
      return Reply(connection, MHD_HTTP_FORBIDDEN, "A valid client certificate is required.\n",
                   text, {{"Connection", "close"}});
    }
    if (path.size() > limits.max_path) {
      return Reply(connection, MHD_HTTP_URI_TOO_LONG, "The path is too long.\n", text,
                   {{"Connection", "close"}});
    }
    if (state.query_parameters > limits.max_query_parameters) {
      return Reply(connection, MHD_HTTP_URI_TOO_LONG,
                   absl::StrCat("The query has ", state.query_parameters,
                                " parameters; at most ", limits.max_query_parameters,
                                " are read.\n"),
                   text, {{"Connection", "close"}});
    }
    // Health checks reveal nothing and must work for probes that carry no credentials.
    if (path == "/-/healthy") return Reply(connection, MHD_HTTP_OK, "Healthy.\n", text);
    if (path == "/-/ready") {
      const bool ready = options.ready && options.ready();
      return Reply(connection, ready ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE,
                   ready ? "Ready.\n" : "Not ready: probes are attaching.\n", text);
    }
    const char* header =
        MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    const MHD_ConnectionInfo* peer =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    std::variant<AuthOutcome, AuthGate::Ticket> decided =
        auth.Check(header == nullptr ? "" : header, peer == nullptr ? nullptr : peer->client_addr);
    if (const AuthOutcome* outcome = std::get_if<AuthOutcome>(&decided)) {
      return Route(connection, path, *outcome);
    }
    // Suspended before the gate can answer: it resumes the request from its own thread.
    state.waiting = true;
    MHD_suspend_connection(connection);
    auth.Wait(std::get<AuthGate::Ticket>(std::move(decided)),
              [&state, connection](AuthOutcome outcome) {
                state.auth = outcome;
                MHD_resume_connection(connection);  // the last touch: the request may end now
              });
    return MHD_YES;
  }

  // The exposition, written into a kept buffer and sent from it: the buffer goes back to
  // `expositions` when libmicrohttpd has sent it (or failed to).
  struct SentExposition {
    ExpositionBuffers* kept;
    std::unique_ptr<std::string> text;
  };
  static void GiveBack(void* cls) {
    std::unique_ptr<SentExposition> sent(static_cast<SentExposition*>(cls));
    sent->kept->Give(std::move(sent->text));
  }
  MHD_Result ReplyExposition(MHD_Connection* connection) {
    auto sent = std::make_unique<SentExposition>(SentExposition{&expositions, expositions.Take()});
    options.render_metrics(sent->text.get());
    std::string& text = *sent->text;
    MHD_Response* response = MHD_create_response_from_buffer_with_free_callback_cls(
        text.size(), text.data(), &GiveBack, sent.get());
    if (response == nullptr) return MHD_NO;
    sent.release();  // the response owns it now
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, kExpositionContentType);
    const MHD_Result queued = MHD_queue_response(connection, MHD_HTTP_OK, response);
    MHD_destroy_response(response);
    return queued;
  }

  // A request that passed the server's own checks, once the auth gate has answered.
  MHD_Result Route(MHD_Connection* connection, const std::string& path, AuthOutcome auth) {
    const char* text = "text/plain; charset=utf-8";
    if (auth == AuthOutcome::kRefused) {
      return Reply(connection, MHD_HTTP_UNAUTHORIZED, "Unauthorized.\n", text,
                   {{MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Basic realm=\"stagewatch\""}});
    }
    if (auth == AuthOutcome::kThrottled) {
      return Reply(connection, MHD_HTTP_TOO_MANY_REQUESTS,
                   "Too many failed logins from this address, or too many being checked: "
                   "retry later.\n",
                   text, {{MHD_HTTP_HEADER_RETRY_AFTER, "1"}});
    }
    if (path == options.telemetry_path) {
      return ReplyExposition(connection);
    }
    if (path == "/") return Reply(connection, MHD_HTTP_OK, landing, "text/html; charset=utf-8");
    if (const ExtraHandler* h = FindHandler(options.handlers, path)) {
      HttpRequest request{path, {}};
      MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &CollectArgument,
                                &request.query);
      const HttpReply reply = h->handle(request);
      return Reply(connection, reply.status, reply.body, reply.content_type.c_str());
    }
    return Reply(connection, MHD_HTTP_NOT_FOUND, "Not found.\n", text);
  }
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                              HttpLimits limits) {
  absl::StatusOr<ListenAddress> addr = ParseListenAddress(options.listen_address);
  if (!addr.ok()) return addr.status();

  // TLS material is read now: a missing or unreadable file stops the start, not a scrape.
  std::string cert, key, client_ca, priorities;
  if (const std::optional<WebTlsConfig>& tls = options.web.tls) {
    for (auto [file, out, what] :
         {std::tuple{&tls->cert_file, &cert, "TLS certificate (cert_file)"},
          std::tuple{&tls->key_file, &key, "TLS key (key_file)"},
          std::tuple{&tls->client_ca_file, &client_ca, "client CA file (client_ca_file)"}}) {
      if (file->empty()) continue;
      absl::StatusOr<std::string> text = ReadBoundedFile(*file, what);
      if (!text.ok()) return text.status();
      *out = *std::move(text);
    }
    if (tls->client_auth == ClientAuth::kNoClientCert) client_ca.clear();
    priorities = TlsPriorities(*tls);
  }

  std::string bound;
  absl::StatusOr<int> fd = Listen(*addr, &bound);
  if (!fd.ok()) return fd.status();

  std::unique_ptr<HttpServer> http(new HttpServer());
  std::string web_config_file = options.web_config_file;
  WebServerConfig web = options.web;
  http->handler_ = std::make_unique<Handler>(std::move(options), limits);
  http->address_ = bound;
  Handler* handler = http->handler_.get();
  absl::StatusOr<std::unique_ptr<WebConfigWatch>> watch = WebConfigWatch::Start(
      std::move(web_config_file), std::move(web),
      [handler](const std::map<std::string, std::string>& users) {
        handler->auth.SetUsers(BasicAuthUsers(users));
      });
  if (!watch.ok()) {
    close(*fd);
    return watch.status();
  }
  handler->web = *std::move(watch);
  const int max_connections = RaiseFileLimit(limits.max_connections);

  std::vector<MHD_OptionItem> items = {
      {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&Handler::OnLog), handler},
      {MHD_OPTION_LISTEN_SOCKET, *fd, nullptr},
      {MHD_OPTION_THREAD_POOL_SIZE, limits.worker_threads, nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT, limits.idle_timeout_seconds, nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, max_connections, nullptr},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, static_cast<intptr_t>(limits.connection_memory),
       nullptr},
      {MHD_OPTION_URI_LOG_CALLBACK, reinterpret_cast<intptr_t>(&Handler::OnRequestLine), handler},
      {MHD_OPTION_NOTIFY_COMPLETED, reinterpret_cast<intptr_t>(&Handler::OnCompleted), handler},
      {MHD_OPTION_NOTIFY_CONNECTION, reinterpret_cast<intptr_t>(&Handler::OnConnection),
       handler},
  };
  // Suspend and resume: requests wait for the auth gate without holding a worker.
  unsigned int flags =
      MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
  if (handler->options.web.tls) {
    flags |= MHD_USE_TLS;
    items.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, cert.data()});
    items.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, key.data()});
    items.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, priorities.data()});
    if (!client_ca.empty()) items.push_back({MHD_OPTION_HTTPS_MEM_TRUST, 0, client_ca.data()});
  }
  items.push_back({MHD_OPTION_END, 0, nullptr});

  http->daemon_ = MHD_start_daemon(flags, 0, nullptr, nullptr, &Handler::OnRequest, handler,
                                   MHD_OPTION_ARRAY, items.data(), MHD_OPTION_END);
  if (http->daemon_ == nullptr) {
    close(*fd);
    absl::MutexLock lock(&handler->log_mu);
    const std::string why = handler->last_log.empty() ? "" : absl::StrCat(": ", handler->last_log);
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot serve on ", bound, why,
        handler->options.web.tls ? "; check cert_file and key_file in --web.config.file (a PEM "
                                   "certificate and its unencrypted private key)"
                                 : ""));
  }
  return http;
}

HttpServer::~HttpServer() {
  if (daemon_ == nullptr) return;
  // libmicrohttpd must not stop with a request suspended: the gate answers every one first.
  handler_->auth.Stop();
  MHD_stop_daemon(daemon_);  // joins the workers, closes every connection and the socket
}

AuthGateStats HttpServer::auth_stats() const { return handler_->auth.stats(); }

void HttpServer::ReloadWebConfig() { handler_->web->Reload(); }

}  // namespace stagewatch::exporters

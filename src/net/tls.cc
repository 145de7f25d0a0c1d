#include "net/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstring>
#include <ctime>

#include "base/logger.h"

namespace hourglass::net {

namespace {

// OpenSSL's most recent error, or `fallback` when its queue is empty (a peer that hung up).
std::string OpenSslError(const std::string& fallback) {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return fallback;
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

// The subject in the RFC 2253 form MongoDB uses for the user names of $external: most specific
// first, short attribute names, no spaces ("CN=client,OU=clients,O=Example,C=US"); the special
// characters escaped with a backslash and bytes of 0x80 and above as \XX, as MongoDB escapes them.
std::string SubjectName(X509_NAME* name) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "";
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(len));
  BIO_free(bio);
  return out;
}

// An encrypted key's password comes only from --tlsCertificateKeyFilePassword: OpenSSL's default
// callback would prompt on the terminal.
int PasswordCallback(char* buf, int size, int, void* userdata) {
  const auto* password = static_cast<const std::string*>(userdata);
  if (password == nullptr || password->empty() || static_cast<int>(password->size()) >= size) {
    return 0;
  }
  std::memcpy(buf, password->data(), password->size());
  return static_cast<int>(password->size());
}

// The handshake goes on whatever the certificate check found, as mongod's: the result is judged
// afterwards (TlsContext::Accept), so the log says why a client was turned away.
int AcceptAnyCertificate(int, X509_STORE_CTX*) { return 1; }

// The TLS versions by their --tlsDisabledProtocols names, oldest first.
struct ProtocolVersion {
  const char* name;
  int version;
  uint64_t no_option;  // the SSL_OP_NO_ option that turns it off
};
constexpr ProtocolVersion kProtocolVersions[] = {{"TLS1_0", TLS1_VERSION, SSL_OP_NO_TLSv1},
                                                 {"TLS1_1", TLS1_1_VERSION, SSL_OP_NO_TLSv1_1},
                                                 {"TLS1_2", TLS1_2_VERSION, SSL_OP_NO_TLSv1_2},
                                                 {"TLS1_3", TLS1_3_VERSION, SSL_OP_NO_TLSv1_3}};

// A file the context cannot use: logged with OpenSSL's reason under mongod's id, answered with
// mongod's InvalidSSLConfiguration message.
Status BadFile(int log_id, const std::string& log_message, const std::string& file,
               const std::string& status_message) {
  LOGE("NETWORK", log_id, log_message,
       "{\"keyFile\":" + JsonQuote(file) +
           ",\"error\":" + JsonQuote(OpenSslError("unknown error")) + "}");
  return Status(ErrorCode::kInvalidSSLConfiguration, status_message);
}

}  // namespace

struct TlsContext::Impl {
  SSL_CTX* ctx = nullptr;
  std::string password;  // outlives ctx's use of it at load time
  ~Impl() {
    if (ctx != nullptr) SSL_CTX_free(ctx);
  }
};

struct TlsConnection::Impl {
  SSL* ssl = nullptr;
  ~Impl() {
    if (ssl != nullptr) SSL_free(ssl);
  }
};

StatusWith<std::unique_ptr<TlsContext>> TlsContext::Create(const commands::TlsOptions& options) {
  std::unique_ptr<TlsContext> out(new TlsContext());
  out->options_ = options;
  out->impl_ = std::make_unique<Impl>();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) {
    return Status(ErrorCode::kInvalidSSLConfiguration,
                  "Cannot create a TLS context: " + OpenSslError("unknown error"));
  }
  out->impl_->ctx = ctx;

  // The versions left after --tlsDisabledProtocols: the lowest and highest bound the range
  // (Debian's OpenSSL would otherwise refuse below TLS 1.2 whatever is asked), and a gap inside
  // it is closed with the matching SSL_OP_NO_ option.
  int lowest = 0, highest = 0;
  uint64_t no_options = 0;
  for (const ProtocolVersion& p : kProtocolVersions) {
    bool disabled = false;
    for (const std::string& d : options.disabled_protocols) disabled |= d == p.name;
    if (disabled) {
      no_options |= p.no_option;
    } else {
      if (lowest == 0) lowest = p.version;
      highest = p.version;
    }
  }
  if (lowest == 0) {
    return Status(ErrorCode::kInvalidOptions,
                  "tlsDisabledProtocols disables every TLS version: nothing is left to speak");
  }
  SSL_CTX_set_min_proto_version(ctx, lowest);
  SSL_CTX_set_max_proto_version(ctx, highest);
  SSL_CTX_set_options(ctx, no_options | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);

  out->impl_->password = options.certificate_key_file_password;
  SSL_CTX_set_default_passwd_cb(ctx, PasswordCallback);
  SSL_CTX_set_default_passwd_cb_userdata(ctx, &out->impl_->password);
  const std::string& pem = options.certificate_key_file;
  constexpr const char* kPemFailure = "Can not set up PEM key file.";
  if (SSL_CTX_use_certificate_chain_file(ctx, pem.c_str()) != 1) {
    return BadFile(23248, "Cannot read certificate file", pem, kPemFailure);
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, pem.c_str(), SSL_FILETYPE_PEM) != 1) {
    return BadFile(23251, "Cannot read PEM key", pem, kPemFailure);
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return BadFile(23253, "SSL certificate validation failed", pem, kPemFailure);
  }
  // The password is needed only while the key is read.
  SSL_CTX_set_default_passwd_cb_userdata(ctx, nullptr);

  X509* cert = SSL_CTX_get0_certificate(ctx);
  out->server_subject_ = SubjectName(X509_get_subject_name(cert));
  struct tm expiry {};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert), &expiry) == 1) {
    out->server_expiration_ = static_cast<int64_t>(timegm(&expiry));
  }

  if (!options.ca_file.empty()) {
    const std::string& ca = options.ca_file;
    STACK_OF(X509_NAME)* names = nullptr;
    if (SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr) != 1 ||
        (names = SSL_load_client_CA_file(ca.c_str())) == nullptr) {
      return Status(ErrorCode::kInvalidSSLConfiguration,
                    "cannot read certificate authority file: " + ca + " " +
                        OpenSslError("no certificate in the file"));
    }
    SSL_CTX_set_client_CA_list(ctx, names);
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {  // tlsUseSystemCA
    return Status(
        ErrorCode::kInvalidSSLConfiguration,
        "cannot read the system's certificate authorities: " + OpenSslError("unknown error"));
  }
  // Clients are asked for a certificate and the check's result judged after the handshake.
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, AcceptAnyCertificate);
  // Clients resume sessions; with client certificates OpenSSL needs a context id to allow it.
  static const unsigned char kSessionContext[] = "hourglassd";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
  return out;
}

TlsContext::~TlsContext() = default;

StatusWith<std::unique_ptr<TlsConnection>> TlsContext::Accept(int fd) const {
  auto impl = std::make_unique<TlsConnection::Impl>();
  impl->ssl = SSL_new(impl_->ctx);
  if (impl->ssl == nullptr || SSL_set_fd(impl->ssl, fd) != 1) {
    return Status(ErrorCode::kSSLHandshakeFailed, OpenSslError("cannot start a TLS session"));
  }
  ERR_clear_error();
  if (SSL_accept(impl->ssl) != 1) {
    long verify = SSL_get_verify_result(impl->ssl);
    std::string reason = OpenSslError("the peer closed the connection during the handshake");
    if (verify != X509_V_OK) reason += ": " + std::string(X509_verify_cert_error_string(verify));
    return Status(ErrorCode::kSSLHandshakeFailed, reason);
  }
  std::unique_ptr<TlsConnection> conn(new TlsConnection(std::move(impl)));
  // The client certificate, judged as mongod does: a certificate is required unless
  // tlsAllowConnectionsWithoutCertificates; an invalid one is refused unless
  // tlsAllowInvalidCertificates, and then names no one.
  X509* peer = SSL_get1_peer_certificate(conn->impl_->ssl);
  if (peer == nullptr) {
    if (!options_.allow_connections_without_certificates) {
      LOGE("NETWORK", 23255, "No SSL certificate provided by peer; connection rejected", "{}");
      return Status(ErrorCode::kSSLHandshakeFailed,
                    "no SSL certificate provided by peer; connection rejected");
    }
    LOGW("NETWORK", 23234, "No SSL certificate provided by peer", "{}");
    return conn;
  }
  const long verified = SSL_get_verify_result(conn->impl_->ssl);
  if (verified != X509_V_OK) {
    X509_free(peer);
    std::string reason = X509_verify_cert_error_string(verified);
    if (!options_.allow_invalid_certificates) {
      LOGE("NETWORK", 23256, "SSL peer certificate validation failed",
           "{\"error\":" + JsonQuote("SSL peer certificate validation failed: " + reason) + "}");
      return Status(ErrorCode::kSSLHandshakeFailed,
                    "SSL peer certificate validation failed: " + reason);
    }
    LOGW("NETWORK", 23235, "SSL peer certificate validation failed",
         "{\"reason\":" + JsonQuote(reason) + "}");
    return conn;
  }
  conn->peer_subject_ = SubjectName(X509_get_subject_name(peer));
  X509_free(peer);
  return conn;
}

TlsConnection::TlsConnection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TlsConnection::~TlsConnection() = default;

bool TlsConnection::ReadExactly(char* buf, size_t n) {
  while (n > 0) {
    size_t got = 0;
    if (SSL_read_ex(impl_->ssl, buf, n, &got) != 1) {
      ERR_clear_error();
      return false;
    }
    buf += got;
    n -= got;
  }
  return true;
}

bool TlsConnection::WriteAll(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    size_t wrote = 0;
    if (SSL_write_ex(impl_->ssl, bytes.data() + off, bytes.size() - off, &wrote) != 1) {
      ERR_clear_error();
      return false;
    }
    off += wrote;
  }
  return true;
}

void TlsConnection::Close() {
  SSL_shutdown(impl_->ssl);
  ERR_clear_error();
}

std::string TlsConnection::protocol() const {
  std::string v = SSL_get_version(impl_->ssl);  // "TLSv1.3"
  if (v.starts_with("TLSv")) v = "TLS " + v.substr(4);
  return v;
}

std::string TlsConnection::cipher() const { return SSL_get_cipher_name(impl_->ssl); }

bool LooksLikeTlsHandshake(const char (&header)[16]) {
  int32_t response_to;
  std::memcpy(&response_to, header + 8, sizeof response_to);  // little-endian, as the wire
  return response_to != 0 && response_to != -1;
}

}  // namespace hourglass::net

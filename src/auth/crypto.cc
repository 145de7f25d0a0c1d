#include "auth/crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "base/status.h"

namespace hourglass::auth {

namespace {

const EVP_MD* Md(HashAlgorithm algorithm) {
  return algorithm == HashAlgorithm::kSha1 ? EVP_sha1() : EVP_sha256();
}

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}

std::string DigestWith(const EVP_MD* md, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  invariant(EVP_Digest(data.data(), data.size(), out, &len, md, nullptr) == 1);
  return std::string(reinterpret_cast<char*>(out), len);
}

}  // namespace

size_t DigestLength(HashAlgorithm algorithm) { return algorithm == HashAlgorithm::kSha1 ? 20 : 32; }

std::string Digest(HashAlgorithm algorithm, std::string_view data) {
  return DigestWith(Md(algorithm), data);
}

std::string Hmac(HashAlgorithm algorithm, std::string_view key, std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  invariant(HMAC(Md(algorithm), key.data(), static_cast<int>(key.size()), Bytes(data), data.size(),
                 out, &len) != nullptr);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string Pbkdf2(HashAlgorithm algorithm, std::string_view password, std::string_view salt,
                   int iterations) {
  std::string out(DigestLength(algorithm), '\0');
  invariant(PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()), Bytes(salt),
                              static_cast<int>(salt.size()), iterations, Md(algorithm),
                              static_cast<int>(out.size()),
                              reinterpret_cast<unsigned char*>(out.data())) == 1);
  return out;
}

std::string Md5Hex(std::string_view data) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string digest = DigestWith(EVP_md5(), data);
  std::string hex;
  hex.reserve(digest.size() * 2);
  for (unsigned char c : digest) {
    hex.push_back(kHex[c >> 4]);
    hex.push_back(kHex[c & 0xF]);
  }
  return hex;
}

std::string Base64Encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), Bytes(bytes),
                          static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

StatusWith<std::string> Base64Decode(std::string_view text) {
  auto bad = [] { return Status(ErrorCode::kBadValue, "invalid base64"); };
  if (text.size() % 4 != 0) return bad();
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool alphabet = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '+' || c == '/';
    // Padding only as the last one or two characters.
    bool padding = c == '=' && i + 2 >= text.size() && (i + 1 == text.size() || text[i + 1] == '=');
    if (!alphabet && !padding) return bad();
  }
  std::string out(text.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), Bytes(text),
                          static_cast<int>(text.size()));
  if (n < 0) return bad();
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t pad = 0;
  if (!text.empty() && text.back() == '=') pad = text[text.size() - 2] == '=' ? 2 : 1;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

std::string SecureRandomBytes(size_t n) {
  std::string out(n, '\0');
  invariant(RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) == 1);
  return out;
}

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace hourglass::auth

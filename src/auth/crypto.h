// The cryptographic primitives SCRAM needs, over OpenSSL's libcrypto: digests (MD5, SHA-1,
// SHA-256), HMAC, PBKDF2, base64, random bytes and a constant-time comparison. Byte strings travel
// as std::string. Every function is thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace hourglass::auth {

enum class HashAlgorithm { kSha1, kSha256 };

// The digest's length in bytes: 20 for SHA-1, 32 for SHA-256.
size_t DigestLength(HashAlgorithm algorithm);
std::string Digest(HashAlgorithm algorithm, std::string_view data);
std::string Hmac(HashAlgorithm algorithm, std::string_view key, std::string_view data);
// PBKDF2 with HMAC of `algorithm`, producing DigestLength bytes (SCRAM's Hi()).
std::string Pbkdf2(HashAlgorithm algorithm, std::string_view password, std::string_view salt,
                   int iterations);
// MD5 as 32 lowercase hex digits (SCRAM-SHA-1's password digest).
std::string Md5Hex(std::string_view data);

std::string Base64Encode(std::string_view bytes);
// BadValue unless `text` is canonical base64 (padded, no whitespace).
StatusWith<std::string> Base64Decode(std::string_view text);

// `n` bytes from OpenSSL's CSPRNG.
std::string SecureRandomBytes(size_t n);
// Equal in time independent of where the strings differ (for keys and proofs).
bool ConstantTimeEqual(std::string_view a, std::string_view b);

}  // namespace hourglass::auth

#include "auth/saslprep.h"

#include <unicode/usprep.h>
#include <unicode/ustring.h>

#include <vector>

namespace hourglass::auth {

namespace {

Status Invalid(std::string_view why) {
  return Status(ErrorCode::kBadValue, "Error preparing string with SASLprep: " + std::string(why));
}

}  // namespace

StatusWith<std::string> SaslPrep(std::string_view text) {
  // Printable ASCII maps to itself: no ICU round trip for the common case.
  bool printable_ascii = true;
  for (unsigned char c : text) printable_ascii &= c >= 0x20 && c < 0x7F;
  if (printable_ascii) return std::string(text);

  UErrorCode err = U_ZERO_ERROR;
  int32_t utf16_len = 0;
  u_strFromUTF8(nullptr, 0, &utf16_len, text.data(), static_cast<int32_t>(text.size()), &err);
  if (err != U_BUFFER_OVERFLOW_ERROR && U_FAILURE(err)) return Invalid("not valid UTF-8");
  std::vector<UChar> utf16(static_cast<size_t>(utf16_len) + 1);
  err = U_ZERO_ERROR;
  u_strFromUTF8(utf16.data(), static_cast<int32_t>(utf16.size()), &utf16_len, text.data(),
                static_cast<int32_t>(text.size()), &err);
  if (U_FAILURE(err)) return Invalid("not valid UTF-8");

  // ICU keeps the profile once opened; opening it again returns the cached one.
  err = U_ZERO_ERROR;
  UStringPrepProfile* profile = usprep_openByType(USPREP_RFC4013_SASLPREP, &err);
  if (U_FAILURE(err)) return Status(ErrorCode::kInternalError, "ICU's SASLprep profile is missing");
  std::vector<UChar> prepared(static_cast<size_t>(utf16_len) * 2 + 16);
  UParseError parse_error;
  int32_t prepared_len = 0;
  for (int attempt = 0; attempt < 2; ++attempt) {
    err = U_ZERO_ERROR;
    prepared_len =
        usprep_prepare(profile, utf16.data(), utf16_len, prepared.data(),
                       static_cast<int32_t>(prepared.size()), USPREP_DEFAULT, &parse_error, &err);
    // NFKC may expand a character many times over: retry once with the length ICU asked for.
    if (err != U_BUFFER_OVERFLOW_ERROR) break;
    prepared.resize(static_cast<size_t>(prepared_len) + 1);
  }
  usprep_close(profile);
  if (U_FAILURE(err)) return Invalid("prohibited or unassigned character");

  int32_t utf8_len = 0;
  err = U_ZERO_ERROR;
  u_strToUTF8(nullptr, 0, &utf8_len, prepared.data(), prepared_len, &err);
  std::string out(static_cast<size_t>(utf8_len), '\0');
  err = U_ZERO_ERROR;
  u_strToUTF8(out.data(), utf8_len, &utf8_len, prepared.data(), prepared_len, &err);
  if (U_FAILURE(err) && err != U_STRING_NOT_TERMINATED_WARNING) return Invalid("not valid UTF-16");
  return out;
}

}  // namespace hourglass::auth

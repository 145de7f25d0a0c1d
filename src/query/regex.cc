#define PCRE2_CODE_UNIT_WIDTH 8
#include "query/regex.h"

#include <pcre2.h>

#include "query/query_errors.h"

namespace hourglass::query {

struct Regex::Code {
  explicit Code(pcre2_code* c) : code(c) {}
  Code(const Code&) = delete;
  Code& operator=(const Code&) = delete;
  ~Code() { pcre2_code_free(code); }
  pcre2_code* const code;
};

namespace {
struct MatchDataDeleter {
  void operator()(pcre2_match_data* m) const { pcre2_match_data_free(m); }
};
}  // namespace

StatusWith<Regex> Regex::Compile(std::string_view pattern, std::string_view options) {
  uint32_t flags = PCRE2_UTF;
  for (char c : options) {
    switch (c) {
      case 'i':
        flags |= PCRE2_CASELESS;
        break;
      case 'm':
        flags |= PCRE2_MULTILINE;
        break;
      case 's':
        flags |= PCRE2_DOTALL;
        break;
      case 'x':
        flags |= PCRE2_EXTENDED;
        break;
      case 'u':
        break;
      default:
        return Status(kBadRegexOptionCode, std::string("invalid flag in regex options: ") + c);
    }
  }
  if (pattern.find('\0') != std::string_view::npos) {
    return Status(kBadRegexCode, "Regular expression cannot contain an embedded null byte");
  }
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   flags, &err, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR buf[256];
    pcre2_get_error_message(err, buf, sizeof(buf));
    return Status(kBadRegexCode, "Regular expression is invalid: " +
                                     std::string(reinterpret_cast<const char*>(buf)));
  }
  return Regex(std::make_shared<const Code>(code));
}

bool Regex::Matches(std::string_view s) const {
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> md(
      pcre2_match_data_create_from_pattern(code_->code, nullptr));
  if (md == nullptr) return false;
  return pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, md.get(),
                     nullptr) >= 0;
}

std::optional<Regex::Match> Regex::Find(std::string_view s, size_t start, int* error) const {
  *error = 0;
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> md(
      pcre2_match_data_create_from_pattern(code_->code, nullptr));
  if (md == nullptr) {
    *error = PCRE2_ERROR_NOMEMORY;
    return std::nullopt;
  }
  int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), start, 0,
                       md.get(), nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) return std::nullopt;
  if (rc < 0) {
    *error = rc;
    return std::nullopt;
  }
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
  Match m;
  const int groups = CaptureCount();
  for (int g = 0; g <= groups; ++g) {
    if (g < rc && ov[2 * g] != PCRE2_UNSET) {
      m.groups.emplace_back(ov[2 * g], ov[2 * g + 1]);
    } else {
      m.groups.emplace_back(std::string_view::npos, std::string_view::npos);
    }
  }
  return m;
}

int Regex::CaptureCount() const {
  uint32_t n = 0;
  pcre2_pattern_info(code_->code, PCRE2_INFO_CAPTURECOUNT, &n);
  return static_cast<int>(n);
}

}  // namespace hourglass::query

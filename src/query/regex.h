// Regex: a compiled PCRE2 regular expression (UTF-8 mode) with MongoDB's regex options, shared by
// the query language ($regex, $in/$pull with regexes, $jsonSchema pattern) and the aggregation
// operators ($regexMatch, $regexFind, $regexFindAll).
//
// Options: i (caseless), m (multiline), s (dotall), x (extended), u (accepted; UTF-8 is always
// on). Compile fails with kBadRegexOptionCode (51108) for another option character (the message
// names it), kBadRegexCode (51091) for an embedded NUL or a pattern PCRE2 rejects (the message
// carries PCRE2's); callers that use other codes (the aggregation operators) map them.
//
// Thread-safety: immutable after Compile; copies share the compiled code and may match
// concurrently (each match allocates its own match data).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace hourglass::query {

class Regex {
 public:
  static StatusWith<Regex> Compile(std::string_view pattern, std::string_view options);

  // Whether the pattern matches somewhere in `s`.
  bool Matches(std::string_view s) const;

  // One match: byte ranges [begin, end) of the whole match (groups[0]) and of each capture group
  // (a group that did not participate is {npos, npos}).
  struct Match {
    std::vector<std::pair<size_t, size_t>> groups;
  };
  // The first match starting at or after byte `start`; nullopt if none. A PCRE2 execution error
  // (e.g. the match limit) is returned as its negative PCRE2 result code in *error (0 otherwise).
  std::optional<Match> Find(std::string_view s, size_t start, int* error) const;

  // Number of capture groups in the pattern.
  int CaptureCount() const;

  struct Code;  // the PCRE2 code, opaque here so that users need not include pcre2.h

 private:
  explicit Regex(std::shared_ptr<const Code> code) : code_(std::move(code)) {}
  std::shared_ptr<const Code> code_;
};

}  // namespace hourglass::query

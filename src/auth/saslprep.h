// SASLprep (RFC 4013): the normalization SCRAM-SHA-256 applies to user names and passwords, so a
// password typed in another Unicode form derives the same key. Backed by ICU's StringPrep profile.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace hourglass::auth {

// `text` (UTF-8) prepared by SASLprep with unassigned code points refused, as drivers prepare
// passwords. BadValue when `text` is not UTF-8 or holds a prohibited character (a control
// character, a private-use one, a misuse of bidirectional text).
StatusWith<std::string> SaslPrep(std::string_view text);

}  // namespace hourglass::auth

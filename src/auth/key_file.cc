#include "auth/key_file.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

namespace hourglass::auth {

namespace {

Status Invalid(const std::string& why) { return Status(ErrorCode::kInvalidOptions, why); }

bool Base64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/' || c == '=';
}

}  // namespace

StatusWith<std::string> ReadKeyFile(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Invalid("error getting file " + path);
  if (!S_ISREG(st.st_mode)) return Invalid(path + " is not a regular file");
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return Invalid("permissions on " + path + " are too open");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Invalid("error opening file " + path);
  std::stringstream text;
  text << in.rdbuf();
  std::string key;
  for (char c : text.str()) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') continue;
    if (!Base64Char(c)) {
      return Invalid("invalid char in key file " + path + ": " + std::string(1, c));
    }
    key.push_back(c);
  }
  if (key.empty()) return Invalid(path + " file empty");
  if (key.size() < 6 || key.size() > 1024) {
    return Invalid("security key in " + path + " has length " + std::to_string(key.size()) +
                   ", must be between 6 and 1024 chars");
  }
  return key;
}

}  // namespace hourglass::auth

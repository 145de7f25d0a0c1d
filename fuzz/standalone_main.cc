// A main() for fuzz targets built without libFuzzer (g++ has none): it calls the target's
// LLVMFuzzerTestOneInput on inputs the way libFuzzer's command line would, minus the coverage
// feedback, so `make fuzz` and crash reproduction work with either compiler.
//
//   op_msg_fuzz FILE...                   replays each file once and exits
//   op_msg_fuzz [flags] [DIR...]          a seeded random-mutation loop over the files of the
//                                         directories (the empty input when there are none)
//   flags: -runs=N (default 100000 unless -max_total_time is given), -max_total_time=SECONDS,
//          -max_len=BYTES (default 4096), -seed=N (default: from the clock)
//
// Mutations: bit flips, random bytes, boundary int32s, truncation, insertion, chunk duplication,
// splicing two corpus inputs, and rewriting the leading little-endian int32 as the input's size
// (the length prefix that wire messages and BSON documents start with). When an input crashes the
// target (a sanitizer report or an abort), it is written to ./crash-standalone for replay.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#if __has_include(<sanitizer/common_interface_defs.h>)
#include <sanitizer/common_interface_defs.h>
#define HG_HAVE_SANITIZER_INTERFACE 1
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The input being run, for the crash handlers (plain globals: read from a signal handler).
const char* g_current = nullptr;
size_t g_current_size = 0;

void WriteCurrentInput() {
  if (g_current == nullptr) return;
  int fd = ::open("crash-standalone", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  size_t done = 0;
  while (done < g_current_size) {
    ssize_t n = ::write(fd, g_current + done, g_current_size - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  static constexpr char kMsg[] =
      "standalone fuzz driver: crashing input written to crash-standalone\n";
  (void)!::write(2, kMsg, sizeof kMsg - 1);
}

void OnFatalSignal(int sig) {
  WriteCurrentInput();
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

int RunOne(const std::string& input) {
  g_current = input.data();
  g_current_size = input.size();
  int rc = LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  g_current = nullptr;
  return rc;
}

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool ParseFlag(std::string_view arg, std::string_view name, long long* out) {
  if (!arg.starts_with(name) || arg.size() <= name.size() || arg[name.size()] != '=') return false;
  *out = std::atoll(std::string(arg.substr(name.size() + 1)).c_str());
  return true;
}

class Mutator {
 public:
  Mutator(uint64_t seed, size_t max_len) : rng_(seed), max_len_(max_len) {}

  std::string Mutate(const std::vector<std::string>& corpus) {
    std::string s = corpus[Below(corpus.size())];
    const int rounds = 1 + static_cast<int>(Below(4));
    for (int i = 0; i < rounds; ++i) MutateOnce(s, corpus);
    if (s.size() > max_len_) s.resize(max_len_);
    return s;
  }

 private:
  size_t Below(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }

  void PutInt32(std::string& s, size_t at, uint32_t v) {
    for (int i = 0; i < 4 && at + i < s.size(); ++i) s[at + i] = static_cast<char>(v >> (8 * i));
  }

  void MutateOnce(std::string& s, const std::vector<std::string>& corpus) {
    static constexpr uint32_t kBoundaries[] = {
        0, 1, 4, 5, 16, 0x7f, 0x80, 0xff, 0x7fffffff, 0x80000000, 0xffffffff, 48000000};
    switch (Below(8)) {
      case 0:  // flip a bit
        if (!s.empty()) s[Below(s.size())] ^= static_cast<char>(1u << Below(8));
        break;
      case 1:  // a random byte
        if (!s.empty()) s[Below(s.size())] = static_cast<char>(Below(256));
        break;
      case 2:  // a boundary int32
        if (!s.empty()) PutInt32(s, Below(s.size()), kBoundaries[Below(std::size(kBoundaries))]);
        break;
      case 3:  // truncate
        s.resize(Below(s.size() + 1));
        break;
      case 4: {  // insert random bytes
        std::string bytes(1 + Below(8), '\0');
        for (char& c : bytes) c = static_cast<char>(Below(256));
        s.insert(Below(s.size() + 1), bytes);
        break;
      }
      case 5:  // duplicate a chunk
        if (!s.empty()) {
          size_t from = Below(s.size());
          std::string chunk = s.substr(from, 1 + Below(s.size() - from));
          s.insert(Below(s.size() + 1), chunk);
        }
        break;
      case 6: {  // splice with another input
        const std::string& other = corpus[Below(corpus.size())];
        s = s.substr(0, Below(s.size() + 1)) + other.substr(Below(other.size() + 1));
        break;
      }
      default:  // fix the length prefix
        if (s.size() >= 4) PutInt32(s, 0, static_cast<uint32_t>(s.size()));
        break;
    }
  }

  std::mt19937_64 rng_;
  size_t max_len_;
};

}  // namespace

int main(int argc, char** argv) {
  long long runs = -1, max_total_time = -1, max_len = 4096;
  long long seed = std::chrono::steady_clock::now().time_since_epoch().count();
  std::vector<std::filesystem::path> files, dirs;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (ParseFlag(a, "-runs", &runs) || ParseFlag(a, "-max_total_time", &max_total_time) ||
        ParseFlag(a, "-max_len", &max_len) || ParseFlag(a, "-seed", &seed)) {
      continue;
    }
    if (a.starts_with('-')) {
      std::fprintf(stderr, "standalone fuzz driver: ignoring flag %s\n", argv[i]);
      continue;
    }
    (std::filesystem::is_directory(a) ? dirs : files).emplace_back(a);
  }
  std::signal(SIGABRT, OnFatalSignal);
  std::signal(SIGSEGV, OnFatalSignal);
  std::signal(SIGBUS, OnFatalSignal);
  std::signal(SIGFPE, OnFatalSignal);
#ifdef HG_HAVE_SANITIZER_INTERFACE
  __sanitizer_set_death_callback(WriteCurrentInput);
#endif

  if (!files.empty() && dirs.empty()) {
    for (const auto& f : files) {
      RunOne(ReadFile(f));
      std::printf("standalone fuzz driver: ran %s\n", f.c_str());
    }
    return 0;
  }

  std::vector<std::string> corpus;
  for (const auto& f : files) corpus.push_back(ReadFile(f));
  for (const auto& d : dirs) {
    for (const auto& entry : std::filesystem::directory_iterator(d)) {
      if (entry.is_regular_file()) corpus.push_back(ReadFile(entry.path()));
    }
  }
  if (corpus.empty()) corpus.emplace_back();
  for (const std::string& input : corpus) RunOne(input);
  if (runs < 0 && max_total_time < 0) runs = 100000;

  std::printf("standalone fuzz driver: %zu corpus inputs, seed %lld\n", corpus.size(), seed);
  Mutator mutator(static_cast<uint64_t>(seed), static_cast<size_t>(max_len));
  const auto start = std::chrono::steady_clock::now();
  long long done = 0;
  while (runs < 0 || done < runs) {
    if (max_total_time >= 0 && (done & 255) == 0 &&
        std::chrono::steady_clock::now() - start >= std::chrono::seconds(max_total_time)) {
      break;
    }
    RunOne(mutator.Mutate(corpus));
    ++done;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("standalone fuzz driver: %lld runs in %.1f s, no crash\n", done, secs);
  return 0;
}

#include "storage/append_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/crc32c.h"
#include "base/little_endian.h"
#include "storage/wiredtiger_error.h"

namespace hourglass::storage {

namespace {

constexpr size_t kHeader = 4 + 8 + 4;
// Finished segments kept for reuse (AppendLog's header says why), and their names' extension.
constexpr size_t kMaxSpares = 2;
constexpr std::string_view kSpareExtension = ".spare";

std::string SegmentName(uint64_t first) {
  char name[32];
  std::snprintf(name, sizeof(name), "%016llx.log", static_cast<unsigned long long>(first));
  return name;
}

// The first record number a segment's file name gives, or 0 if it is not a segment's name.
uint64_t ParseSegmentName(const std::string& name) {
  if (name.size() != 20 || name.substr(16) != ".log") return 0;
  uint64_t v = 0;
  for (size_t i = 0; i < 16; ++i) {
    const char c = name[i];
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return 0;
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

Status Errno(int err, const std::string& what) { return internal::WtStatus(err, what); }

Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno(errno, "opening the directory " + dir);
  const int ret = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  return ret == 0 ? Status::OK() : Errno(err, "syncing the directory " + dir);
}

Status ReadWhole(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno(errno, "opening " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Errno(err, "reading " + path);
  }
  out->resize(static_cast<size_t>(st.st_size));
  size_t at = 0;
  while (at < out->size()) {
    const ssize_t n = ::read(fd, out->data() + at, out->size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    at += static_cast<size_t>(n);
  }
  const int err = errno;
  ::close(fd);
  if (at != out->size()) return Errno(err != 0 ? err : EIO, "reading " + path);
  return Status::OK();
}

// Walks the records of segment `data`, whose first is numbered `first`: fn(number, payload) for
// each whole one. Returns the number after the last whole record; `*torn` says whether the bytes
// after it begin the next record, cut short or corrupt (a crash interrupted its write). Other bytes
// there end the segment as quietly: a reused file's older records, or a write of which nothing
// reached the disk.
uint64_t WalkSegment(std::string_view data, uint64_t first, bool* torn,
                     const std::function<bool(uint64_t, std::string_view)>& fn) {
  uint64_t expect = first;
  size_t at = 0;
  *torn = false;
  while (data.size() - at >= kHeader) {
    const char* h = data.data() + at;
    const uint64_t len = LoadLe(h, 4);
    if (LoadLe(h + 4, 8) != expect) break;
    *torn = true;
    if (len > data.size() - at - kHeader) break;
    const std::string_view payload(h + kHeader, len);
    uint32_t crc = Crc32c(std::string_view(h, 12));
    if (Crc32c(payload, crc) != static_cast<uint32_t>(LoadLe(h + 12, 4))) break;
    *torn = false;
    if (!fn(expect, payload)) return expect;
    at += kHeader + len;
    ++expect;
  }
  // Fewer bytes than a header: one cut short, in all likelihood.
  if (at < data.size() && data.size() - at < kHeader) *torn = true;
  return expect;
}

}  // namespace

struct AppendLog::File {
  explicit File(int f) : fd(f) {}
  ~File() { ::close(fd); }
  const int fd;
};

StatusWith<std::unique_ptr<AppendLog>> AppendLog::Open(std::string dir, uint64_t segment_bytes) {
  std::unique_ptr<AppendLog> log(new AppendLog(std::move(dir), segment_bytes));
  if (log->dir_.empty()) return log;
  std::error_code ec;
  std::filesystem::create_directories(log->dir_, ec);
  if (ec) return Errno(ec.value(), "creating the directory " + log->dir_);
  std::vector<std::string> spares;
  for (const auto& e : std::filesystem::directory_iterator(log->dir_, ec)) {
    const std::string name = e.path().filename().string();
    const uint64_t first = ParseSegmentName(name);
    if (first != 0) log->segments_.push_back({first, e.path().string()});
    if (name.ends_with(kSpareExtension)) spares.push_back(e.path().string());
  }
  if (ec) return Errno(ec.value(), "listing the directory " + log->dir_);
  std::sort(spares.begin(), spares.end());
  for (std::string& spare : spares) {
    if (log->spares_.size() < kMaxSpares) {
      log->spares_.push_back(std::move(spare));
    } else if (::unlink(spare.c_str()) != 0 && errno != ENOENT) {
      return Errno(errno, "removing " + spare);
    }
  }
  std::sort(log->segments_.begin(), log->segments_.end(),
            [](const Segment& a, const Segment& b) { return a.first < b.first; });
  log->replay_segments_ = log->segments_.size();
  if (!log->segments_.empty()) {
    // The next number follows the last whole record of the last segment.
    const Segment& last = log->segments_.back();
    std::string data;
    HG_RETURN_IF_ERROR(ReadWhole(last.path, &data));
    bool torn = false;
    log->next_ =
        WalkSegment(data, last.first, &torn, [](uint64_t, std::string_view) { return true; });
    if (log->next_ == last.first) {
      // Not one whole record (a crash as it began): the new segment takes its name.
      if (::unlink(last.path.c_str()) != 0) return Errno(errno, "removing " + last.path);
      log->segments_.pop_back();
      log->replay_segments_ = log->segments_.size();
    }
  }
  return log;
}

AppendLog::~AppendLog() = default;

Status AppendLog::BeginSegment() {
  Segment seg{next_, (std::filesystem::path(dir_) / SegmentName(next_)).string()};
  int fd = -1;
  if (!spares_.empty()) {
    // Written over from its start: its older records end the new ones at replay (WalkSegment).
    const std::string spare = std::move(spares_.back());
    spares_.pop_back();
    if (::rename(spare.c_str(), seg.path.c_str()) == 0) {
      fd = ::open(seg.path.c_str(), O_WRONLY | O_CLOEXEC);
    } else {
      ::unlink(spare.c_str());
    }
  }
  if (fd < 0) fd = ::open(seg.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Errno(errno, "creating " + seg.path);
  if (current_ != nullptr && current_dirty_) unsynced_.push_back(current_);
  current_ = std::make_shared<File>(fd);
  current_size_ = 0;
  current_dirty_ = false;
  dir_dirty_ = true;
  segments_.push_back(std::move(seg));
  return Status::OK();
}

StatusWith<uint64_t> AppendLog::Append(std::string_view payload) {
  if (payload.size() > UINT32_MAX) {
    return Status(ErrorCode::kBadValue, "an append-log record is larger than 4 GiB");
  }
  std::lock_guard lk(mu_);
  const uint64_t number = next_;
  if (dir_.empty()) {
    ++next_;
    return number;
  }
  if (broken_) {
    return Status(ErrorCode::kInternalError,
                  "the append log in " + dir_ + " could not undo a failed write");
  }
  if (current_ == nullptr ||
      (current_size_ > 0 && current_size_ + kHeader + payload.size() > segment_bytes_)) {
    HG_RETURN_IF_ERROR(BeginSegment());
  }
  char header[kHeader];
  StoreLe(header, payload.size(), 4);
  StoreLe(header + 4, number, 8);
  StoreLe(header + 12, Crc32c(payload, Crc32c(std::string_view(header, 12))), 4);
  iovec iov[2] = {{header, kHeader}, {const_cast<char*>(payload.data()), payload.size()}};
  int first = 0;  // iov[first] is the first part not written yet
  // Positioned writes: a reused segment's file is written over, not appended to.
  off_t at = static_cast<off_t>(current_size_);
  while (first < 2) {
    const ssize_t n = ::pwritev(current_->fd, iov + first, 2 - first, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      // Cut the partial record off, so that later records stay readable.
      if (::ftruncate(current_->fd, static_cast<off_t>(current_size_)) != 0) broken_ = true;
      return Errno(err, "appending to " + segments_.back().path);
    }
    // After a short write, go on from where it stopped.
    at += n;
    size_t left = static_cast<size_t>(n);
    while (first < 2 && left >= iov[first].iov_len) left -= iov[first++].iov_len;
    if (first < 2) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
      iov[first].iov_len -= left;
    }
  }
  current_size_ += kHeader + payload.size();
  current_dirty_ = true;
  ++next_;
  return number;
}

Status AppendLog::Sync() {
  std::vector<std::shared_ptr<File>> files;
  bool dir = false;
  {
    std::lock_guard lk(mu_);
    files.swap(unsynced_);
    if (current_dirty_) files.push_back(current_);
    current_dirty_ = false;
    dir = std::exchange(dir_dirty_, false);
  }
  Status st = Status::OK();
  for (const auto& f : files) {
    if (::fdatasync(f->fd) != 0 && st.ok()) st = Errno(errno, "syncing the append log in " + dir_);
  }
  if (dir && st.ok()) st = SyncDir(dir_);
  if (!st.ok()) {
    // Whatever did not reach the disk is synced again next time.
    std::lock_guard lk(mu_);
    for (auto& f : files) {
      if (f != current_) unsynced_.push_back(f);
    }
    current_dirty_ = current_ != nullptr;
    dir_dirty_ = dir_dirty_ || dir;
  }
  return st;
}

Status AppendLog::ForEach(const std::function<Status(uint64_t, std::string_view)>& fn) const {
  std::vector<Segment> replay;
  {
    std::lock_guard lk(mu_);
    replay.assign(segments_.begin(), segments_.begin() + static_cast<long>(replay_segments_));
  }
  for (const Segment& seg : replay) {
    std::string data;
    HG_RETURN_IF_ERROR(ReadWhole(seg.path, &data));
    Status st = Status::OK();
    bool torn = false;
    const uint64_t end = WalkSegment(data, seg.first, &torn, [&](uint64_t n, std::string_view p) {
      st = fn(n, p);
      return st.ok();
    });
    HG_RETURN_IF_ERROR(st);
    if (torn) {
      internal::LogStorage("W", "an append-log segment ends in a record cut short or corrupt",
                           seg.path + ": records from " + std::to_string(end) + " on are skipped");
    }
  }
  return Status::OK();
}

void AppendLog::NumberAfter(uint64_t n) {
  std::lock_guard lk(mu_);
  if (next_ > n) return;
  next_ = n + 1;
  // A segment's name is its first record's number: the next record begins a new one.
  if (current_ != nullptr) {
    if (current_dirty_) unsynced_.push_back(current_);
    current_ = nullptr;
    current_dirty_ = false;
  }
}

uint64_t AppendLog::next_number() const {
  std::lock_guard lk(mu_);
  return next_;
}

bool AppendLog::HasSegmentsBefore(uint64_t n) const {
  std::lock_guard lk(mu_);
  const size_t closed = segments_.size() - (current_ != nullptr ? 1 : 0);
  // Segment i holds the records numbered from its first to the next one's first (or next_).
  for (size_t i = 0; i < closed; ++i) {
    const uint64_t end = i + 1 < segments_.size() ? segments_[i + 1].first : next_;
    if (end <= n) return true;
  }
  return false;
}

StatusWith<uint64_t> AppendLog::DropBefore(uint64_t n) {
  std::vector<Segment> drop;
  uint64_t kept_from = 0;
  {
    std::lock_guard lk(mu_);
    const size_t closed = segments_.size() - (current_ != nullptr ? 1 : 0);
    size_t k = 0;
    while (k < closed) {
      const uint64_t end = k + 1 < segments_.size() ? segments_[k + 1].first : next_;
      if (end > n) break;
      ++k;
    }
    drop.assign(segments_.begin(), segments_.begin() + static_cast<long>(k));
    segments_.erase(segments_.begin(), segments_.begin() + static_cast<long>(k));
    replay_segments_ -= std::min(replay_segments_, k);
    kept_from = segments_.empty() ? next_ : segments_.front().first;
  }
  if (drop.empty()) return kept_from;
  // The newest finished segments become spares, while there is room for them.
  std::vector<std::string> spared;
  {
    std::lock_guard lk(mu_);
    while (!drop.empty() && spares_.size() + spared.size() < kMaxSpares) {
      const Segment& seg = drop.back();
      std::string spare = seg.path.substr(0, seg.path.size() - 4) + std::string(kSpareExtension);
      if (::rename(seg.path.c_str(), spare.c_str()) != 0) break;
      spared.push_back(std::move(spare));
      drop.pop_back();
    }
    for (std::string& spare : spared) spares_.push_back(std::move(spare));
  }
  for (const Segment& seg : drop) {
    if (::unlink(seg.path.c_str()) != 0 && errno != ENOENT) {
      return Errno(errno, "removing " + seg.path);
    }
  }
  HG_RETURN_IF_ERROR(SyncDir(dir_));
  return kept_from;
}

}  // namespace hourglass::storage

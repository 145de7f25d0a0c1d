#include "pipeline/spill_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace hourglass::pipeline {

namespace {

constexpr size_t kWriteBufferBytes = 256 * 1024;

Status IoError(const std::string& what, const std::string& path, int err) {
  ErrorCode code = err == ENOSPC ? ErrorCode::kOutOfDiskSpace : ErrorCode::kInternalError;
  return Status(code, what + " spill file " + path + ": " + std::strerror(err));
}

int32_t LoadInt32(const char* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

SpillFile::SpillFile(std::string dir, std::string_view prefix)
    : dir_(std::move(dir)), prefix_(prefix) {}

SpillFile::~SpillFile() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
}

Status SpillFile::Open() {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    return Status(ErrorCode::kInternalError,
                  "cannot create the spill directory " + dir_ + ": " + ec.message());
  }
  static std::atomic<uint64_t> counter{0};
  path_ = dir_ + "/" + prefix_ + "-" + std::to_string(::getpid()) + "-" +
          std::to_string(counter.fetch_add(1));
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) return IoError("cannot create", path_, errno);
  return Status::OK();
}

Status SpillFile::Append(const bson::BsonObj& doc) {
  if (fd_ < 0) HG_RETURN_IF_ERROR(Open());
  pending_.append(doc.data(), static_cast<size_t>(doc.size()));
  size_ += doc.size();
  if (pending_.size() >= kWriteBufferBytes) return Flush();
  return Status::OK();
}

Status SpillFile::Flush() {
  size_t done = 0;
  while (done < pending_.size()) {
    ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return IoError("cannot write", path_, errno);
    }
    done += static_cast<size_t>(n);
  }
  pending_.clear();
  return Status::OK();
}

SpillFile::Reader::Reader(const SpillFile* file, int64_t begin, int64_t end, size_t buffer_bytes)
    : file_(file), pos_(begin), end_(end), buffer_bytes_(buffer_bytes) {}

StatusWith<std::optional<bson::BsonObj>> SpillFile::Reader::Next() {
  if (pos_ >= end_) return std::optional<bson::BsonObj>();
  // Makes [pos_, pos_ + need) available in buffer_, reading at least buffer_bytes_.
  auto fill = [this](size_t need) -> Status {
    const size_t want =
        static_cast<size_t>(std::min<int64_t>(std::max(need, buffer_bytes_), end_ - pos_));
    if (want < need) {
      return Status(ErrorCode::kInternalError, "corrupt spill file " + file_->path_);
    }
    buffer_.resize(want);
    size_t got = 0;
    while (got < want) {
      ssize_t n = ::pread(file_->fd_, buffer_.data() + got, want - got,
                          static_cast<off_t>(pos_ + static_cast<int64_t>(got)));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return IoError("cannot read", file_->path_, errno);
      if (n == 0) return Status(ErrorCode::kInternalError, "short spill file " + file_->path_);
      got += static_cast<size_t>(n);
    }
    buffer_pos_ = 0;
    return Status::OK();
  };
  size_t avail = buffer_.size() - buffer_pos_;
  if (avail < 4) {
    HG_RETURN_IF_ERROR(fill(4));
    avail = buffer_.size();
  }
  const int32_t len = LoadInt32(buffer_.data() + buffer_pos_);
  if (len < 5 || pos_ + len > end_) {
    return Status(ErrorCode::kInternalError, "corrupt spill file " + file_->path_);
  }
  if (avail < static_cast<size_t>(len)) HG_RETURN_IF_ERROR(fill(static_cast<size_t>(len)));
  auto owned =
      std::make_shared<const std::string>(buffer_.data() + buffer_pos_, static_cast<size_t>(len));
  buffer_pos_ += static_cast<size_t>(len);
  pos_ += len;
  return std::optional<bson::BsonObj>(bson::BsonObj(std::move(owned)));
}

std::unique_ptr<SpillFile::Reader> SpillFile::Read(int64_t begin, int64_t end,
                                                   size_t buffer_bytes) const {
  return std::make_unique<Reader>(this, begin, end, buffer_bytes);
}

SpillMetrics& GlobalSpillMetrics() {
  static SpillMetrics m;
  return m;
}

std::string SpillDirectory(const std::string& dbpath) { return dbpath + "/_tmp"; }

void RemoveStaleSpillFiles(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

int64_t CountSpillFiles(const std::string& dir) {
  std::error_code ec;
  int64_t n = 0;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  return n;
}

}  // namespace hourglass::pipeline

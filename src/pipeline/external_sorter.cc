#include "pipeline/external_sorter.h"

#include <algorithm>

#include "pipeline/pipeline.h"

namespace hourglass::pipeline {

using bson::BsonObj;

// One sorted input of the merge: a run on disk, or the rows still in memory (the last input,
// as they were added after every run).
struct ExternalSorter::Source {
  std::unique_ptr<SpillFile::Reader> reader;  // null: in memory
  std::vector<SortRow>* rows = nullptr;
  size_t pos = 0;
  SortRow current;

  // Loads the next row into `current`; false at the end.
  StatusWith<bool> Advance() {
    if (!reader) {
      if (pos >= rows->size()) return false;
      current = std::move((*rows)[pos++]);
      return true;
    }
    HG_ASSIGN_OR_RETURN(auto key, reader->Next());
    if (!key) return false;
    HG_ASSIGN_OR_RETURN(auto doc, reader->Next());
    if (!doc) return Status(ErrorCode::kInternalError, "truncated sort spill file");
    current = SortRow{std::move(*key), std::move(*doc)};
    return true;
  }
};

ExternalSorterOptions ExternalSorterOptions::ForStage(const PipelineContext& ctx,
                                                      int64_t limit_bytes,
                                                      std::string exceeded_message) {
  ExternalSorterOptions o;
  o.memory_limit_bytes = limit_bytes;
  o.allow_disk_use = ctx.allow_disk_use;
  o.tmp_dir = ctx.tmp_dir;
  o.exceeded_message = std::move(exceeded_message);
  return o;
}

ExternalSorter::ExternalSorter(KeyCompare compare, ExternalSorterOptions options)
    : compare_(std::move(compare)), options_(std::move(options)) {}

ExternalSorter::~ExternalSorter() = default;

int64_t ExternalSorter::RowBytes(const SortRow& r) {
  return r.key.size() + r.doc.size() + static_cast<int64_t>(sizeof(SortRow)) + 32;
}

void ExternalSorter::SortHeld() {
  std::stable_sort(rows_.begin(), rows_.end(), [this](const SortRow& a, const SortRow& b) {
    return compare_(a.key, b.key) < 0;
  });
}

// Keeps the first `limit` held rows. Rows added later sort after held rows they tie with, so
// trimming early never changes which rows win.
void ExternalSorter::Trim() {
  const size_t limit = static_cast<size_t>(options_.limit);
  if (options_.limit <= 0 || rows_.size() <= limit) return;
  SortHeld();
  for (size_t i = limit; i < rows_.size(); ++i) bytes_ -= RowBytes(rows_[i]);
  rows_.resize(limit);
}

Status ExternalSorter::Add(BsonObj key, BsonObj doc) {
  if (open_run_begin_) return Status(ErrorCode::kInternalError, "ExternalSorter::Add in a run");
  SortRow row{std::move(key), std::move(doc)};
  bytes_ += RowBytes(row);
  rows_.push_back(std::move(row));
  if (options_.limit > 0 && rows_.size() >= 2 * static_cast<size_t>(options_.limit)) Trim();
  if (bytes_ <= options_.memory_limit_bytes) return Status::OK();
  Trim();
  if (bytes_ <= options_.memory_limit_bytes) return Status::OK();
  if (!options_.allow_disk_use || options_.tmp_dir.empty()) {
    return Status(ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed, options_.exceeded_message);
  }
  return Spill();
}

Status ExternalSorter::Spill() {
  SortHeld();
  if (!file_) file_ = std::make_unique<SpillFile>(options_.tmp_dir, options_.spill_prefix);
  const int64_t begin = file_->size();
  size_t n = rows_.size();
  if (options_.limit > 0) n = std::min(n, static_cast<size_t>(options_.limit));
  for (size_t i = 0; i < n; ++i) {
    HG_RETURN_IF_ERROR(file_->Append(rows_[i].key));
    HG_RETURN_IF_ERROR(file_->Append(rows_[i].doc));
  }
  HG_RETURN_IF_ERROR(file_->Flush());
  runs_.push_back(Run{begin, file_->size()});
  rows_.clear();
  rows_.shrink_to_fit();
  bytes_ = 0;
  return Status::OK();
}

Status ExternalSorter::AppendToSortedRun(const BsonObj& key, const BsonObj& doc) {
  if (!options_.allow_disk_use || options_.tmp_dir.empty()) {
    return Status(ErrorCode::kQueryExceededMemoryLimitNoDiskUseAllowed, options_.exceeded_message);
  }
  if (!file_) file_ = std::make_unique<SpillFile>(options_.tmp_dir, options_.spill_prefix);
  if (!open_run_begin_) open_run_begin_ = file_->size();
  HG_RETURN_IF_ERROR(file_->Append(key));
  return file_->Append(doc);
}

Status ExternalSorter::EndSortedRun() {
  if (!open_run_begin_) return Status::OK();
  HG_RETURN_IF_ERROR(file_->Flush());
  runs_.push_back(Run{*open_run_begin_, file_->size()});
  open_run_begin_.reset();
  return Status::OK();
}

Status ExternalSorter::Finish() {
  HG_RETURN_IF_ERROR(EndSortedRun());
  finished_ = true;
  SortHeld();
  if (options_.limit > 0 && rows_.size() > static_cast<size_t>(options_.limit)) {
    rows_.resize(static_cast<size_t>(options_.limit));
  }
  if (runs_.empty()) return Status::OK();
  // The runs' read buffers share the memory limit (256 bytes to 64 KB each).
  const int64_t per_run = options_.memory_limit_bytes / static_cast<int64_t>(runs_.size() + 1);
  const size_t buffer = static_cast<size_t>(std::clamp<int64_t>(per_run, 256, 64 * 1024));
  for (const Run& r : runs_) {
    auto s = std::make_unique<Source>();
    s->reader = file_->Read(r.begin, r.end, buffer);
    sources_.push_back(std::move(s));
  }
  auto mem = std::make_unique<Source>();
  mem->rows = &rows_;
  sources_.push_back(std::move(mem));
  for (size_t i = 0; i < sources_.size(); ++i) {
    HG_ASSIGN_OR_RETURN(bool has, sources_[i]->Advance());
    if (has) heap_.push_back(i);
  }
  std::make_heap(heap_.begin(), heap_.end(), [this](size_t a, size_t b) {
    int c = compare_(sources_[a]->current.key, sources_[b]->current.key);
    return c != 0 ? c > 0 : a > b;  // a max-heap on "sorts later": the top sorts first
  });
  return Status::OK();
}

StatusWith<std::optional<SortRow>> ExternalSorter::Next() {
  if (!finished_) return Status(ErrorCode::kInternalError, "ExternalSorter::Next before Finish");
  if (options_.limit > 0 && emitted_ >= options_.limit) return std::optional<SortRow>();
  if (sources_.empty()) {
    if (pos_ >= rows_.size()) return std::optional<SortRow>();
    ++emitted_;
    SortRow r = std::move(rows_[pos_++]);
    return std::optional<SortRow>(std::move(r));
  }
  if (heap_.empty()) return std::optional<SortRow>();
  auto later = [this](size_t a, size_t b) {
    int c = compare_(sources_[a]->current.key, sources_[b]->current.key);
    return c != 0 ? c > 0 : a > b;
  };
  std::pop_heap(heap_.begin(), heap_.end(), later);
  const size_t top = heap_.back();
  SortRow out = std::move(sources_[top]->current);
  HG_ASSIGN_OR_RETURN(bool has, sources_[top]->Advance());
  if (has) {
    std::push_heap(heap_.begin(), heap_.end(), later);
  } else {
    heap_.pop_back();
  }
  ++emitted_;
  return std::optional<SortRow>(std::move(out));
}

}  // namespace hourglass::pipeline

// A DocumentStream over a collection's documents in RecordId order, optionally filtered. It reads
// in chunks, each in its own short storage session, and resumes after the last RecordId it saw —
// so a client cursor can live across getMore calls without pinning a storage snapshot.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "catalog/collection.h"
#include "pipeline/pipeline.h"
#include "query/matcher.h"
#include "query/projection.h"

namespace hourglass::exec {

class CollectionScan : public pipeline::DocumentStream {
 public:
  // `reverse`: in descending RecordId order ({$natural: -1}).
  CollectionScan(std::shared_ptr<catalog::Collection> coll, storage::KvEngine* engine,
                 std::optional<query::Matcher> filter, bool reverse = false);
  // showRecordId: append each document's RecordId (kRecordIdAnnotation).
  void set_with_record_id(bool on) { with_record_id_ = on; }
  StatusWith<std::optional<bson::BsonObj>> Next() override;
  int64_t docs_examined() const { return docs_examined_; }

 private:
  Status ReadChunk();

  std::shared_ptr<catalog::Collection> coll_;
  storage::KvEngine* engine_;
  std::optional<query::Matcher> filter_;
  std::deque<bson::BsonObj> buffer_;
  std::optional<std::string> last_position_;  // the resume point (NaturalCursor::position)
  bool done_ = false;
  bool reverse_ = false;
  bool with_record_id_ = false;
  int64_t docs_examined_ = 0;
};

// find's showRecordId and returnKey: the scans append the RecordId (int64) and the index key
// ({field: value} in key pattern order) to each document under these names, which no user
// field can have; FindOutputStream takes them off again.
inline constexpr std::string_view kRecordIdAnnotation = "$__hg_recordId";
inline constexpr std::string_view kIndexKeyAnnotation = "$__hg_indexKey";

// `doc` with `name: value` appended.
bson::BsonObj AppendAnnotation(const bson::BsonObj& doc, std::string_view name,
                               const bson::BsonElement& value);

// The last stage of a find with showRecordId or returnKey: removes the annotations, then outputs
// the index key ({} when no index was read) for returnKey, else the projected document, followed
// by `$recordId` (NumberLong) for showRecordId.
class FindOutputStream : public pipeline::DocumentStream {
 public:
  FindOutputStream(std::unique_ptr<pipeline::DocumentStream> in,
                   std::optional<query::Projection> projection, bool return_key,
                   bool show_record_id)
      : in_(std::move(in)),
        projection_(std::move(projection)),
        return_key_(return_key),
        show_record_id_(show_record_id) {}
  StatusWith<std::optional<bson::BsonObj>> Next() override;

 private:
  std::unique_ptr<pipeline::DocumentStream> in_;
  std::optional<query::Projection> projection_;
  bool return_key_;
  bool show_record_id_;
};

// A stream applying a find projection to each document.
class ProjectionStream : public pipeline::DocumentStream {
 public:
  ProjectionStream(std::unique_ptr<pipeline::DocumentStream> in, query::Projection projection)
      : in_(std::move(in)), projection_(std::move(projection)) {}
  StatusWith<std::optional<bson::BsonObj>> Next() override;

 private:
  std::unique_ptr<pipeline::DocumentStream> in_;
  query::Projection projection_;
};

}  // namespace hourglass::exec

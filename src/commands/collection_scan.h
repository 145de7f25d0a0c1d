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

namespace hourglass::commands {

class CollectionScan : public pipeline::DocumentStream {
 public:
  // `reverse`: in descending RecordId order ({$natural: -1}).
  CollectionScan(std::shared_ptr<catalog::Collection> coll, storage::KvEngine* engine,
                 std::optional<query::Matcher> filter, bool reverse = false);
  StatusWith<std::optional<bson::BsonObj>> Next() override;
  int64_t docs_examined() const { return docs_examined_; }

 private:
  Status ReadChunk();

  std::shared_ptr<catalog::Collection> coll_;
  storage::KvEngine* engine_;
  std::optional<query::Matcher> filter_;
  std::deque<bson::BsonObj> buffer_;
  std::string last_key_;
  bool started_ = false;
  bool done_ = false;
  bool reverse_ = false;
  int64_t docs_examined_ = 0;
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

}  // namespace hourglass::commands

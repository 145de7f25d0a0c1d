// The byte layout of a version-1 bucket document (spec §3.1), kept in memory so that appending
// rows to a stored bucket is a handful of byte-range edits (storage::Session::Modification) —
// each column grows at its end, a few length prefixes and the small `control` object change —
// instead of a rewrite of the whole document. Inserting a bucket's rows one at a time therefore
// writes O(bucket) bytes in total, not O(bucket²).
//
// Layout: {_id: ObjectId, control: {version: 1, min: {...}, max: {...}}, [meta: <value>],
//          data: {<field>: {"0": v, "1": v, ...}, ...}}; columns appear in the order their fields
// were first seen; a row missing a field leaves a gap in that column.
//
// Not thread-safe: the bucket's committer owns it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "storage/session.h"

namespace hourglass::timeseries {

class BucketDocument {
 public:
  // A bucket not yet stored. `meta` is the normalized meta element to store as `meta` (any name;
  // EOO for none).
  BucketDocument(const bson::ObjectId& id, const bson::BsonElement& meta);

  // The layout of a stored version-1 bucket, to append to it (reopening). BadValue if `bucket` is
  // not a well-formed version-1 bucket (columns must be objects whose keys are row numbers).
  static StatusWith<BucketDocument> FromStored(const bson::BsonObj& bucket,
                                               std::string_view time_field);

  const bson::ObjectId& id() const { return id_; }
  // A new _id before the first write (after a duplicate-key collision).
  void SetId(const bson::ObjectId& id) { id_ = id; }
  bool stored() const { return stored_; }
  // The stored `meta` element (named "meta"), or EOO.
  bson::BsonElement meta() const {
    return meta_elem_.empty() ? bson::BsonElement() : bson::BsonElement(meta_elem_.data());
  }
  uint32_t num_rows() const { return num_rows_; }
  // Size of the document as stored after the last Commit (0 before the first).
  size_t size() const { return size_; }

  // Adds `rows` (measurements; the field `skip_field`, the metaField, is left out) as the next
  // rows. Nothing is visible until Commit.
  void StageRows(const std::vector<bson::BsonObj>& rows, std::string_view skip_field);

  // Produces the write for the staged rows with `control` (the whole new control object): the
  // full document if the bucket was never stored (`*full`), else the edits that turn the stored
  // document into the new one (`*edits`, in the order to apply). Then the caller reports the
  // write's outcome with Finish: success makes the staged rows committed; failure forgets them.
  void Prepare(const bson::BsonObj& control, std::string* full,
               std::vector<storage::Session::Modification>* edits);
  void Finish(bool success);

  // The names of the data columns, in their order in the stored document once the staged rows
  // are written (columns first seen in staged rows come last).
  std::vector<std::string_view> ColumnNames() const;

  // Bytes held by the layout (for the catalog's memory accounting).
  size_t ApproxMemory() const;

 private:
  struct Column {
    std::string name;
    uint32_t elem_size = 0;  // whole element as stored: type, name, len4, entries, EOO
    std::string staged;      // entries added since the last commit
    uint32_t staged_count = 0;
    bool is_new = true;  // not in the stored document yet
  };
  Column& ColumnFor(std::string_view name, size_t hint);

  bson::ObjectId id_;
  std::string meta_elem_;  // the stored `meta` element bytes, or empty
  bool stored_ = false;
  uint32_t num_rows_ = 0;  // committed rows
  uint32_t staged_rows_ = 0;
  uint32_t control_elem_size_ = 0;
  uint32_t prepared_control_size_ = 0;
  size_t size_ = 0;
  size_t prepared_size_ = 0;
  std::vector<Column> columns_;
};

}  // namespace hourglass::timeseries

// The byte layout of a bucket document, kept in memory so that appending rows to a stored bucket
// is a handful of byte-range edits (storage::Session::Modification) instead of a rewrite of the
// whole document. Inserting a bucket's rows a few at a time therefore writes O(bucket) bytes in
// total, not O(bucket²).
//
// Two layouts (spec §3.1, §3.2):
// - version 1: {_id: ObjectId, control: {version: 1, min: {...}, max: {...}}, [meta: <value>],
//   data: {<field>: {"0": v, "1": v, ...}, ...}}; columns appear in the order their fields were
//   first seen; a row missing a field leaves a gap in that column. Each column grows at its end.
// - compressed (MongoDB 8.0's always-compressed buckets): {_id, control: {version: 2 or 3, min,
//   max, count: <rows>}, [meta], data: {<time field>: BinData(7), <field>: BinData(7), ...}}:
//   each column is a BSONColumn kept open in a bsoncolumn::BsonColumnBuilder, the time column
//   first, the others in the order their fields were first seen, a row missing a field a skip.
//   Version 2 while the rows arrive in time order, 3 from the first that does not. Appending
//   edits each column from the first byte its encoder changed (BsonColumnBuilder's intermediate
//   diffs), so a write costs what the rows add, not the bucket.
//
// Not thread-safe: the bucket's committer owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "bsoncolumn/bson_column_builder.h"
#include "storage/session.h"
#include "timeseries/bucket_field_tree.h"

namespace hourglass::timeseries {

class BucketDocument {
 public:
  // A version-1 bucket not yet stored. `meta` is the normalized meta element to store as `meta`
  // (any name; EOO for none).
  BucketDocument(const bson::ObjectId& id, const bson::BsonElement& meta);
  // A compressed bucket not yet stored, whose time column is `time_field`.
  static BucketDocument Compressed(const bson::ObjectId& id, const bson::BsonElement& meta,
                                   std::string_view time_field);

  // The layout of a stored bucket, to append to it (reopening): version 1, or compressed (its
  // columns are decoded and replayed into builders: time in proportion to the bucket, once).
  // BadValue if `bucket` is not a well-formed bucket of either layout (version-1 columns must be
  // objects whose keys are row numbers; compressed columns BSONColumns of control.count cells).
  static StatusWith<BucketDocument> FromStored(const bson::BsonObj& bucket,
                                               std::string_view time_field);

  bool compressed() const { return compressed_; }
  // Whether a compressed bucket can hold `row`: a BSONColumn cannot hold CodeWScope values.
  static bool CanCompress(const bson::BsonObj& row);

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
  // rows. Nothing is visible until Commit. A compressed layout takes only rows CanCompress
  // accepts (callers check).
  void StageRows(std::span<const bson::BsonObj> rows, std::string_view skip_field);
  void StageRows(const std::vector<bson::BsonObj>& rows, std::string_view skip_field) {
    StageRows(std::span<const bson::BsonObj>(rows), skip_field);
  }
  // StageRows for rows that own their bytes (BsonObj::IsOwned: views into a shared buffer, such
  // as the journal's entries): a compressed layout holds them until it encodes them instead of
  // copying them.
  void StageSharedRows(std::span<const bson::BsonObj> rows, std::string_view skip_field);
  // Produces the write for the staged rows with `control` (the version-1 control object
  // {version, min, max}; a compressed layout writes its own version and count): the full
  // document if the bucket was never stored (`*full`), else the edits that turn the stored
  // document into the new one (`*edits`, in the order to apply). It may be called again (a
  // retried write, more rows staged). Then the caller reports the write's outcome with Finish:
  // success makes the staged rows committed; failure forgets them — except that a compressed
  // layout cannot forget rows once stored: after a failed write it must not be used again.
  // `rewrite_after` (compressed layout): once that many writes in a row were edits, the next
  // one rewrites the stored document whole (`*full`, no edits: prepared_whole()), for the
  // caller to store as a plain update: the storage engine keeps a value's edits as a chain that
  // each read re-applies, and a compressed bucket's edits, one per column, each move the rest of
  // the document. Negative: never.
  // `rows` (compressed layout): the write covers only the first `rows` staged rows; the rows
  // staged after them, before or after the Prepare, stay staged through its Finish — so a writer
  // can stage rows while another writes the earlier ones (the write-back flush). Version 1 takes
  // every staged row (callers pass no `rows`, or exactly that many).
  static constexpr uint32_t kAllStaged = UINT32_MAX;
  void Prepare(const bson::BsonObj& control, std::string* full,
               std::vector<storage::Session::Modification>* edits, int64_t rewrite_after = -1,
               uint32_t rows = kAllStaged);
  void Finish(bool success);
  // Rows staged and not yet committed.
  uint32_t staged_rows() const { return staged_rows_; }
  // Compressed layout with no row staged: stages `rows` and encodes them at once (no copy; they
  // need not outlive the call), adding each top-level field's values to `bounds` (its slot: the
  // field's column index), so that the one walk of a row that encodes it also bounds it.
  bool CanStageEncoded() const { return compressed_ && !failed_ && staged_rows_ == 0; }
  void StageEncoded(std::span<const bson::BsonObj> rows, std::string_view skip_field,
                    BucketFieldTree::RowBounds* bounds);
  // Compressed layout whose staged rows are copies (StageRows): encodes them into the columns'
  // builders now, rather than at the next Prepare, and frees the copies; nothing becomes visible,
  // and a later Prepare must cover at least these rows. Held rows (StageSharedRows) cost nothing
  // to keep: they stay staged, for the next write to encode in one run with the rows after them
  // (and to bound them while it does: EncodeRowsBounded). A no-op for version 1.
  void EncodeStagedCopies();
  // Compressed layout whose staged rows are held (StageSharedRows): encodes the first `rows` staged
  // rows into the builders now, rather than at the next Prepare (which must then cover them),
  // adding the top-level fields of those it encodes to `bounds` as StageEncoded does (views into
  // the held rows: the caller holds them too); returns how many of them a Prepare had encoded
  // already (the first ones), whose values `bounds` lacks.
  // Otherwise (version 1, a failed layout, fewer rows staged, copies staged): encodes nothing and
  // returns `rows`.
  uint32_t EncodeRowsBounded(uint32_t rows, BucketFieldTree::RowBounds* bounds);
  // Whether the last Prepare of a stored document made it whole (see `rewrite_after`).
  bool prepared_whole() const { return prepared_whole_; }
  // The last Prepare's write of a stored document as MongoDB's update diff (catalog/update_diff.h;
  // what the oplog logs), whether it made edits or the whole document: `scontrol` (or `u:
  // {control}`), then `sdata` — a compressed column's append as a binary diff (`b`), a new column
  // as an insert (`i`), a version-1 column's new entries as its sub-diff's inserts. Applied to
  // the stored document it gives the prepared one byte for byte. Built at the first call between
  // a Prepare and its Finish (only a replica set's log needs it); empty for a document not yet
  // stored. Valid until the next Prepare or Finish.
  bson::BsonObj PreparedDiff();
  // Compressed layout: whether a committed write by edits came after the document was last
  // stored whole (its insert or a rewrite), so storage may hold it as a chain of edits.
  bool edited_since_whole() const { return edits_in_a_row_ > 0; }
  // The caller stored the document again whole, the same bytes as a plain update: the next
  // writes count their edits from there.
  void MarkStoredWhole() { edits_in_a_row_ = 0; }

  // The names of the data columns, in their order in the stored document once the staged rows
  // are written (columns first seen in staged rows come last).
  std::vector<std::string_view> ColumnNames() const;

  // Bytes held by the layout (for the catalog's memory accounting): as measured at the last
  // Finish, plus what was staged since (cheap: commits call it for every bucket they touch).
  size_t ApproxMemory() const;

 private:
  // A compressed column: its builder holds every cell, committed and staged.
  struct Packed {
    bsoncolumn::BsonColumnBuilder builder;
    uint32_t stored_len = 0;  // bytes of the binary as stored
    // Set by Prepare until Finish (held out of line: most columns are between commits).
    std::unique_ptr<bsoncolumn::BsonColumnBuilder::Proposal> proposal;
  };
  struct Column {
    std::string name;
    uint32_t elem_size = 0;  // whole element as stored: type, name, len4, entries, EOO
    std::string staged;      // version 1: entries added since the last commit
    uint32_t staged_count = 0;
    bool is_new = true;              // not in the stored document yet
    std::unique_ptr<Packed> packed;  // compressed layout
  };
  Column& ColumnFor(std::string_view name, size_t hint);
  void MeasureLayout();  // sets layout_memory_
  // Prepare's parts shared by both layouts: the whole document of prepared_size_ bytes around
  // `columns` (the column elements, `data_len` the size of `data`'s object), and the last edits
  // of a stored one (data's length, control, the document's length).
  void WriteFull(std::string_view control_elem, size_t data_len, std::string_view columns,
                 std::string* full) const;
  void AppendHeadEdits(std::string control_elem, size_t data_doc, size_t data_len,
                       std::vector<storage::Session::Modification>* edits) const;
  // Where each stored column's element starts, `data`'s object being at `data_doc` (a new column:
  // where the stored ones end).
  std::vector<size_t> StoredColumnOffsets(size_t data_doc) const;

  void PrepareCompressed(const bson::BsonObj& control, std::string* full,
                         std::vector<storage::Session::Modification>* edits, bool whole,
                         uint32_t rows);
  // Encodes the next `rows` staged rows into the columns' builders.
  void EncodeRows(uint32_t rows, BucketFieldTree::RowBounds* bounds = nullptr);
  void EncodeRow(const char* row, BucketFieldTree::RowBounds* bounds = nullptr);
  static StatusWith<BucketDocument> FromStoredCompressed(const bson::BsonObj& bucket,
                                                         std::string_view time_field);

  bson::ObjectId id_;
  std::string meta_elem_;  // the stored `meta` element bytes, or empty
  bool stored_ = false;
  uint32_t num_rows_ = 0;  // committed rows
  uint32_t staged_rows_ = 0;
  uint32_t prepared_rows_ = 0;  // staged rows the last Prepare covered
  uint32_t control_elem_size_ = 0;
  uint32_t prepared_control_size_ = 0;
  // The stored control object, and the one the last Prepare wrote: the diff's base.
  std::string control_;
  std::string prepared_control_;
  std::string prepared_diff_;
  size_t size_ = 0;
  size_t prepared_size_ = 0;
  std::vector<Column> columns_;
  // Compressed layout: the time column's name; the staged rows not yet in the builders, as
  // copies back to back or held (shared_rows_; one of the two is empty) — appending a row to a
  // bucket's builders touches kilobytes of encoder state, which is cheap for a run of rows and a
  // cache miss per cell for one row at a time;
  // rows in the builders; whether every row so far came in time order (version 2, else 3), the
  // latest time so far, and whether a write failed.
  bool compressed_ = false;
  std::string time_field_;
  std::string skip_field_;
  std::string unencoded_;
  std::vector<bson::BsonObj> shared_rows_;  // staged rows held, not copied (StageSharedRows)
  uint32_t encoded_rows_ = 0;
  size_t time_column_ = 0;  // first unless a stored bucket says otherwise
  size_t layout_memory_ = 0;
  size_t staged_bytes_ = 0;     // version 1
  int64_t edits_in_a_row_ = 0;  // writes by edits since the document was last written whole
  bool prepared_whole_ = false;
  bool sorted_ = true;
  int64_t max_time_ = INT64_MIN;
  bool failed_ = false;
};

}  // namespace hourglass::timeseries

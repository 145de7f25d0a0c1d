// Aggregation pipelines: parsing an aggregate command's `pipeline` array into stages and running
// them as a chain of pull-based document streams.
//
// Model: Pipeline::Parse builds immutable stage objects; Bind() connects them to a source stream
// and returns the output stream. Each Next() call on the output pulls from the stage below only
// as much as it needs ($match, $project, $unwind... stream one document at a time; $group, $sort,
// $sample, $facet and $bucket consume their whole input on the first call). The returned stream
// shares ownership of the stages, so it may outlive the Pipeline (e.g. held by a cursor across
// getMores). A stream is single-threaded; a Pipeline may be bound several times.
//
// Errors (Status codes): unknown stage 40324, stage object without exactly one field 40323, a
// non-object stage TypeMismatch (14), $out/$merge not last 40601, stages not built yet and stages
// over other collections without PipelineContext::collections CommandNotSupported (115),
// blocking stages over their memory limit without allowDiskUse
// QueryExceededMemoryLimitNoDiskUseAllowed (292); with it $sort, $group, $bucketAuto,
// $setWindowFields and $densify spill to files under PipelineContext::tmp_dir (see
// memory_parameters.h and README.md, "Memory and spilling"). Numbered codes carry MongoDB's
// number (codeName "Location<n>" unless base/error_codes.def names it).
// See README.md in this folder.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "pipeline/expression.h"
#include "query/expression_hooks.h"
#include "query/matcher.h"
#include "query/sort.h"

namespace hourglass::pipeline {

class BlockSource;

// A stream of documents pulled one at a time. Returns an owned document, std::nullopt at end,
// or an error (after which the stream must not be pulled again).
class DocumentStream {
 public:
  virtual ~DocumentStream() = default;
  virtual StatusWith<std::optional<bson::BsonObj>> Next() = 0;
  // The same rows in column blocks (column_block.h), for a consumer that can use them; nullptr
  // when the stream has no columnar form. A consumer that takes the blocks never calls Next().
  virtual BlockSource* AsBlockSource() { return nullptr; }
  // Whether the stream gives its documents in ascending order of distinct _id values, none of
  // them an array, as a $sort {_id: 1} under the pipeline's collation orders them ($group's
  // output): such a sort is then the identity. Known once Next() has been called.
  virtual bool InIdOrder() const { return false; }
  // When the stream is InIdOrder and every _id is a document of the same fields in the same
  // order, none of them an array nor a dotted name ($group by {a: ..., b: ...}): those fields,
  // so that the order is also that of a $sort {"_id.a": 1, "_id.b": 1}. Empty otherwise.
  virtual std::vector<std::string> IdMembers() const { return {}; }
};

// A stream over documents held in memory (tests, $documents, $facet inputs).
class VectorDocumentStream : public DocumentStream {
 public:
  explicit VectorDocumentStream(std::vector<bson::BsonObj> docs) : docs_(std::move(docs)) {}
  StatusWith<std::optional<bson::BsonObj>> Next() override {
    if (pos_ >= docs_.size()) return std::optional<bson::BsonObj>();
    return std::optional<bson::BsonObj>(docs_[pos_++].Owned());
  }

 private:
  std::vector<bson::BsonObj> docs_;
  size_t pos_ = 0;
};

// What stages that read or write other collections ($lookup, $graphLookup, $unionWith, $out,
// $merge) need from the command layer, which implements it over the catalog and storage (this
// module knows nothing of them). Calls may block on storage. An implementation is used by one
// operation's streams at a time (not thread-safe); it may outlive the command (cursors).
struct GeoNearSpec;
struct PipelineContext;

class CollectionAccess {
 public:
  virtual ~CollectionAccess() = default;
  // The documents of db.coll matching `filter` ({} for all), in natural order. A time-series
  // collection yields its unpacked measurements; a missing collection yields nothing. The
  // filter's $expr reads $$NOW and the `let` variables of `expr_ctx`.
  virtual StatusWith<std::unique_ptr<DocumentStream>> Read(
      const std::string& db, const std::string& coll, const bson::BsonObj& filter,
      const query::ExpressionContext& expr_ctx) = 0;
  // A $lookup or $unionWith sub-pipeline's leading $geoNear: db.coll's documents by distance,
  // as an aggregate on it starting with `spec` reads them (`ctx`, the sub-pipeline's, holds the
  // variables `spec` may read). Its errors; a view: Location40603, its pipeline comes first.
  virtual StatusWith<std::unique_ptr<DocumentStream>> ReadNear(const std::string& db,
                                                               const std::string& coll,
                                                               const GeoNearSpec& spec,
                                                               const PipelineContext& ctx) = 0;
  // $out: replaces the contents of db.coll with `docs`, which are written to a temporary
  // collection renamed over the target at the end (a failure leaves the target unchanged).
  // `timeseries` (empty: none) makes the target a time-series collection with those options.
  virtual Status ReplaceCollection(const std::string& db, const std::string& coll,
                                   const bson::BsonObj& timeseries, DocumentStream& docs) = 0;
  // $merge: OK when db.coll may be merged into on `on` (a unique index on those fields, or
  // _id, whose collation is `strings`, the aggregate's: null for simple): 51183 otherwise;
  // CommandNotSupportedOnView (166) for views and time-series collections.
  virtual Status CheckMergeTarget(const std::string& db, const std::string& coll,
                                  const std::vector<std::string>& on,
                                  const bson::StringComparator* strings) = 0;
  // $merge: the document of db.coll matching the equality `filter` under `strings`, if any.
  virtual StatusWith<std::optional<bson::BsonObj>> FindOne(
      const std::string& db, const std::string& coll, const bson::BsonObj& filter,
      const std::shared_ptr<const bson::StringComparator>& strings) = 0;
  // $merge: inserts `doc` (creating the collection if needed); DuplicateKey (11000) on a clash.
  virtual Status Insert(const std::string& db, const std::string& coll,
                        const bson::BsonObj& doc) = 0;
  // $merge: replaces the document whose _id is old_doc's _id with new_doc.
  virtual Status Replace(const std::string& db, const std::string& coll,
                         const bson::BsonObj& old_doc, const bson::BsonObj& new_doc) = 0;
};

// Per-stage memory limits in bytes, named after the server parameters that set them.
struct MemoryLimits {
  static constexpr int64_t kDefault = 100 * 1024 * 1024;
  int64_t sort = kDefault;         // internalQueryMaxBlockingSortMemoryUsageBytes ($sort, find)
  int64_t group = kDefault;        // internalDocumentSourceGroupMaxMemoryBytes ($group, $bucket)
  int64_t window = kDefault;       // internalDocumentSourceSetWindowFieldsMaxMemoryBytes
  int64_t bucket_auto = kDefault;  // internalDocumentSourceBucketAutoMaxMemoryBytes
  int64_t densify = kDefault;      // internalDocumentSourceDensifyMaxMemoryBytes
};

struct PipelineContext {
  // The aggregate's database (default for `from`/`into`), and access to other collections;
  // null when the pipeline runs without a command (unit tests): those stages then fail with
  // CommandNotSupported (115).
  std::string db;
  std::shared_ptr<CollectionAccess> collections;
  int64_t now_millis = 0;  // the value of $$NOW
  // The variables of the command's `let` (null: none), which every expression may read; a
  // $lookup sub-pipeline gets its own, holding the outer ones and the stage's `let`.
  std::shared_ptr<const query::LetVariables> let;
  // Whether blocking stages may spill to disk when they exceed their memory limit; without it
  // they fail with 292. The command layer resolves an omitted allowDiskUse through the
  // allowDiskUseByDefault server parameter (memory_parameters.h).
  bool allow_disk_use = false;
  // Where spill files go (<dbpath>/_tmp); empty: nowhere, so stages fail with 292 at their limit
  // even with allow_disk_use.
  std::string tmp_dir;
  // Bytes each blocking stage may hold (MongoDB's server parameters, all 100 MB by default).
  MemoryLimits limits;
  // The aggregate's collation (null: simple): $match filters, $sort, $group's keys and the
  // expressions compare strings under it. The command layer admits it only with stages that
  // honour it.
  std::shared_ptr<const bson::StringComparator> collator;

  // What the pipeline's expressions parse in: its `let` and its collation (which the context
  // keeps alive as long as the stages that hold it).
  ParseContext Expressions() const { return ParseContext(let).WithCollator(collator); }
};

// $geoNear's options (the read of the collection runs it: exec/near_read.h). Distances are NaN
// when not given.
struct GeoNearSpec {
  bson::BsonObj near;  // {near: <GeoJSON point or legacy pair>}, when given as a constant
  // `near` given as an expression of variables ("$$pt", as a $lookup's `let` binds it): null
  // for a constant. Read through NearValue.
  std::shared_ptr<const Expression> near_expr;
  bool spherical = false;
  double min_distance = 0, max_distance = 0, multiplier = 1;
  bson::BsonObj query;
  std::string distance_field, include_locs, key;
};

// {near: <value>}: the constant, or `near_expr` evaluated with its variables' current values
// (it must not read the document: it is constant for a read). Location5860401 when it is neither
// an object nor an array.
StatusWith<bson::BsonObj> NearValue(const GeoNearSpec& spec, int64_t now_millis);

// Location40603: a $geoNear that is not the first stage of what reads the collection.
Status GeoNearNotFirst();

class Stage;

class Pipeline {
 public:
  // Parses the stages of an aggregate command's `pipeline` array (a BSON array, or a document
  // whose values are the stages). See the header comment for the error codes.
  static StatusWith<std::unique_ptr<Pipeline>> Parse(const bson::BsonObj& stages_array,
                                                     const PipelineContext& ctx);

  // find's sort, skip and limit as typed stages (each only when given: a sort with keys, a
  // skip or limit above 0), coalesced as Parse coalesces a $sort with the limit after it.
  static std::unique_ptr<Pipeline> ForFind(std::optional<query::SortPattern> sort, int64_t skip,
                                           int64_t limit, const PipelineContext& ctx);

  // A leading $match handed to the caller's scan: its filter and the filter parsed (with this
  // pipeline's $$NOW and `let`), so the scan need not parse it again.
  struct LeadingMatch {
    bson::BsonObj filter;
    query::Matcher matcher;
  };
  // If the first stage is a $match, removes it and returns it; else nullopt.
  std::optional<LeadingMatch> PopLeadingMatch();
  // If the first stage is a $geoNear, removes it and returns its options; else nullopt. (A
  // $geoNear is always first: elsewhere it fails to parse with Location40603.)
  std::optional<GeoNearSpec> PopLeadingGeoNear();

  // The stage documents ({"$name": spec}) the stages were parsed from, in order, owned by the
  // pipeline: what a planner reads to decide which stages its source absorbs. A stage document
  // that parses into several stages ($sortByCount, $bucket) is one entry. Empty for ForFind.
  const std::vector<bson::BsonObj>& SourceStages() const { return sources_; }
  // Removes the stages parsed from the first `n` entries of SourceStages(), and those entries.
  void DropLeadingSources(size_t n);
  // Parses `stages` (stage documents) with this pipeline's context and puts them in front, as
  // the first entries of SourceStages(). Errors: Parse's.
  Status Prepend(const std::vector<bson::BsonObj>& stages);

  // Tells the first stage that its input comes in the order it would sort it into
  // (Stage::OrderedInputVariant); false, changing nothing, if it has no such variant.
  bool FirstStageTakesOrderedInput();

  // Connects the pipeline to its source and returns the output stream. Stages that produce
  // their own input ($documents) ignore the source.
  std::unique_ptr<DocumentStream> Bind(std::unique_ptr<DocumentStream> source) const;

  bool IsEmpty() const { return stages_.empty(); }
  size_t NumStages() const { return stages_.size(); }
  const PipelineContext& context() const { return ctx_; }

  // Runs the whole pipeline over `docs` and collects its output (tests, $facet).
  StatusWith<std::vector<bson::BsonObj>> RunOver(std::vector<bson::BsonObj> docs) const;

 private:
  Pipeline() = default;
  // Parses one stage document (its position `index` among `count`) onto stages_.
  Status ParseStage(const bson::BsonElement& stage_elem, int index, int count);
  PipelineContext ctx_;
  std::vector<std::shared_ptr<const Stage>> stages_;
  // For each stage, the index of its entry in sources_ (empty for ForFind).
  std::vector<size_t> origins_;
  std::vector<bson::BsonObj> sources_;
};

// Drains `stream` into a vector (stopping at the first error).
StatusWith<std::vector<bson::BsonObj>> DrainStream(DocumentStream& stream);

}  // namespace hourglass::pipeline

// The keys of 2dsphere indexes and the key intervals a geo query reads from them, as MongoDB's
// 2dsphere index (version 3) makes them: a document's geometry is covered by S2 cells between
// a coarsest and a finest level, each cell one key (its 64-bit id as a signed NumberLong, which
// keeps the cells of one face contiguous in index order). A query region is covered the same way;
// a document may match when one of its cells lies inside a covering cell (a range of ids) or
// contains one (one of the covering cell's ancestors down to the coarsest level: single ids).
// The keys only narrow the search: the query's own test is applied to every document found.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bson/bson.h"
#include "geo/geo_query.h"

namespace hourglass::geo {

// A 2dsphere index's version (its spec's 2dsphereIndexVersion) and cell levels (its
// coarsestIndexedLevel and finestIndexedLevel). A shape is covered by up to `max_cells` cells of
// levels [coarsest, finest] (in version 3 a point is its leaf cell instead; before, it is covered
// like a shape), and a query reads the ancestors of its covering down to `coarsest`. Version 3
// keys a cell by its id (NumberLong), versions 1 and 2 by its token (SphereCellToken, a string).
// MongoDB's defaults: for version 3 the levels whose cells' average edge is nearest 2,000 km and
// 110 m (2 and 16), 20 cells; before, 100 km and 500 m (7 and 14), 50 cells.
struct SphereIndexParams {
  int version = 3;
  int coarsest = 2;
  int finest = 16;
  int max_cells = 20;
  static SphereIndexParams Default(int version = 3);
  // A 2dsphere index spec's: its 2dsphereIndexVersion's defaults, then its coarsestIndexedLevel
  // and finestIndexedLevel (already known to be whole numbers when present). MongoDB's unnamed
  // codes 16747 (coarsest below 0), 16748 (finest above 30), 16749 (finest below coarsest).
  static StatusWith<SphereIndexParams> FromSpec(const bson::BsonObj& spec);
};

// The string key of `cell` in an index of version 1 or 2: S2's "<face>/<child digits>" (every
// descendant's token starts with it).
std::string SphereCellToken(int64_t cell);

// The cells of a document's value for a 2dsphere index: a GeoJSON object or a legacy pair that is
// a longitude and latitude, or an array of those (one set of cells for all). No cells for a
// missing value, null or an empty array (2dsphere indexes of version 2 and 3 leave such documents
// out; version 1 keys them as null). Version 1 takes only points, LineStrings and Polygons.
// Anything else is an error: the reason (the caller adds MongoDB's code 16755, "Can't extract geo
// keys", and the document).
StatusWith<std::vector<int64_t>> SphereIndexCells(const bson::BsonElement& value,
                                                  const SphereIndexParams& levels);

// The cells of a time-series bucket for a 2dsphere index on a measurement (MongoDB's
// "2dsphere_bucket"): the measurement's values in the bucket (`values`; EOO, null, undefined, []
// and {} are skipped) as one MultiPoint, covered as other shapes are. No cells when the bucket
// holds no position. Every value must be a point (a GeoJSON Point or a legacy pair): anything
// else is an error, the reason (the caller adds 16755 and the bucket).
StatusWith<std::vector<int64_t>> SphereBucketCells(const std::vector<bson::BsonElement>& values,
                                                   const SphereIndexParams& levels);
// SphereBucketCells' test of one value, without covering anything: what a measurement must be to
// enter such a bucket (OK for a point, or a value that is skipped).
Status CheckBucketPoint(const bson::BsonElement& value);

// An inclusive interval of signed cell ids (lo == hi: one cell).
struct CellInterval {
  int64_t lo = 0, hi = 0;
};

// An interval of cell tokens (versions 1 and 2): [lo, hi), or the one token lo when hi is
// empty.
struct TokenInterval {
  std::string lo, hi;
};

// The intervals of cell ids holding every document `q` can match in an index of `levels`, sorted
// and disjoint, or nullopt when `q` is a flat shape ($box, $center, $polygon: 2d indexes serve
// those).
std::optional<std::vector<CellInterval>> SphereQueryIntervals(const GeoQuery& q,
                                                              const SphereIndexParams& levels);
// The same as token intervals, for an index of version 1 or 2: sorted and disjoint.
std::optional<std::vector<TokenInterval>> SphereQueryTokenIntervals(
    const GeoQuery& q, const SphereIndexParams& params);

}  // namespace hourglass::geo

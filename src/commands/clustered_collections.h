// Collections clustered by `_id` that users create (`create` with `clusteredIndex: {key: {_id:
// 1}, unique: true}`), checked and shown as MongoDB 7.0 does: the create option, what
// createIndexes, dropIndexes and collMod do with the clustered index, and `expireAfterSeconds`
// (TTL on `_id` dates). How such a collection is stored: catalog::Collection::ClusteredIndexSpec.
// (Time-series bucket collections are clustered too, by the internal `clusteredIndex: true`.)
//
// Stateless functions; errors carry MongoDB's codes and messages.
#pragma once

#include <optional>

#include "base/status.h"
#include "bson/bson.h"
#include "catalog/collection.h"

namespace hourglass::commands {

// {_id: 1} by BSON equality (1, 1.0 and NumberLong(1) alike): the `_id` index's key pattern, and
// the only cluster key MongoDB accepts.
bool IsIdKeyPattern(const bson::BsonObj& key);

// create: the `clusteredIndex` option as the catalog stores it and listCollections shows it,
// {v: 2, key: {_id: 1}, name, unique: true}. The boolean form is refused (5979703: internal
// collections only); IDL errors (40414, 40415, 14), `unique: false` (5979700), another key (197),
// `v` other than 2 (5979704).
StatusWith<bson::BsonObj> ParseClusteredIndexOption(const bson::BsonElement& option);

// createIndexes: whether the spec `spec` (an element of `indexes`) names the clustered index of
// `coll` (nullptr: the collection does not exist yet), which then exists already (MongoDB answers
// as for an index that exists). False for an ordinary spec. The `clustered` index option is
// checked here: false (6492800), without `unique: true` (67), with other options (197), on a
// collection not clustered by that key (6243700) or one that createIndexes would create
// (6100900); the clustered index's name on another key (6100906), its key with `unique: false`
// (6100909).
StatusWith<bool> NamesClusteredIndex(const catalog::Collection* coll,
                                     const bson::BsonElement& spec);

// dropIndexes and collMod: 5979800 "It is illegal to drop the clusteredIndex".
Status CannotDropClusteredIndex();

// collMod `expireAfterSeconds` on a regular collection: the collection's new options (the
// setting replaced, or removed by "off"), or 72 for a collection not clustered by `_id`.
StatusWith<bson::BsonObj> CollModClusteredExpiry(const catalog::Collection& coll,
                                                 const bson::BsonElement& value);

}  // namespace hourglass::commands

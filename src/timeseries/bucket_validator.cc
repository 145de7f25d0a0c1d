#include "timeseries/bucket_validator.h"

#include <string>

#include "timeseries/bucket_compression.h"

namespace hourglass::timeseries {

using bson::BsonElement;
using bson::BsonType;

namespace {
// MongoDB's message, with the rule in errInfo.details as its $jsonSchema validator reports it.
Status Failed(const std::string& why) {
  bson::BsonBuilder b;
  size_t info = b.OpenObject("errInfo");
  size_t details = b.OpenObject("details");
  b.AppendString("operatorName", "$jsonSchema");
  b.AppendString("reason", why);
  b.Close(details);
  b.Close(info);
  return Status(ErrorCode::kDocumentValidationFailure, "Document failed validation", b.Release());
}
}  // namespace

int BucketSchemaVersion(const bson::BsonObj& validator) {
  BsonElement control = validator["$jsonSchema"];
  for (const char* name : {"properties", "control"}) {
    if (control.type() != BsonType::kObject) return 1;
    control = control.Obj()[name];
  }
  if (control.type() != BsonType::kObject) return 1;
  BsonElement extra = control.Obj()["additionalProperties"];
  return extra.type() == BsonType::kBool && !extra.Bool() ? 2 : 1;
}

Status ValidateBucketDocument(const bson::BsonObj& doc, std::string_view time_field,
                              int schema_version) {
  for (BsonElement e : doc) {
    std::string_view f = e.FieldName();
    if (f != "_id" && f != "control" && f != "data" && f != "meta") {
      return Failed("additional top-level field '" + std::string(f) + "'");
    }
  }
  if (doc["_id"].type() != BsonType::kObjectId) return Failed("'_id' must be an objectId");
  BsonElement control = doc["control"];
  if (control.type() != BsonType::kObject) return Failed("'control' must be an object");
  if (!control.Obj()["version"].IsNumber()) return Failed("'control.version' must be a number");
  for (const char* side : {"min", "max"}) {
    BsonElement s = control.Obj()[side];
    if (s.type() != BsonType::kObject) {
      return Failed("'control." + std::string(side) + "' must be an object");
    }
    if (s.Obj()[time_field].type() != BsonType::kDate) {
      return Failed("'control." + std::string(side) + "." + std::string(time_field) +
                    "' must be a date");
    }
  }
  BsonElement closed = control.Obj()["closed"];
  if (!closed.eoo() && closed.type() != BsonType::kBool) {
    return Failed("'control.closed' must be a bool");
  }
  if (schema_version >= 2) {
    for (BsonElement e : control.Obj()) {
      std::string_view f = e.FieldName();
      if (f != "version" && f != "min" && f != "max" && f != "closed" && f != "count") {
        return Failed("additional field 'control." + std::string(f) + "'");
      }
    }
    BsonElement count = control.Obj()["count"];
    if (!count.eoo() && (!count.IsNumber() || !(count.NumberDouble() >= 1))) {
      return Failed("'control.count' must be a number of at least 1");
    }
  }
  if (doc["data"].type() != BsonType::kObject) return Failed("'data' must be an object");
  if (IsCompressedBucket(doc)) {
    // Readers decode a compressed bucket's columns trusting control.count: a bucket that
    // disagrees with itself is refused here, where the writer can still be told.
    Status columns = CheckCompressedBucket(doc, time_field);
    if (!columns.ok()) return Failed(columns.reason());
  }
  return Status::OK();
}

}  // namespace hourglass::timeseries

#include "http/measurement_writer.h"

#include <algorithm>

#include "catalog/catalog.h"
#include "commands/dispatcher.h"

namespace hourglass::http {

namespace {

// An insert command carries up to this many bytes of measurements (under the 16 MB limit).
constexpr size_t kInsertBatchBytes = size_t{8} << 20;
constexpr size_t kInsertBatchCount = 100'000;

// Whether the measurements themselves are at fault (their collection name), so that the client
// is told to drop them (4xx); any other failure is the server's, and the client should retry
// (5xx), as Prometheus and InfluxDB's clients do.
bool AboutTheData(const Status& st) {
  return st.code() == ErrorCode::kInvalidNamespace || st.code() == ErrorCode::kBadValue;
}

}  // namespace

ServerParameter* HttpWriteGranularity() {
  static ServerParameter* p = [] {
    auto& reg = ServerParameterRegistry::Get();
    const char* name = "hourglassHttpWriteGranularity";
    if (ServerParameter* found = reg.Find(name)) return found;
    return reg.Register(name, std::string("seconds"), true, true, [](const ParameterValue& v) {
      const std::string* s = std::get_if<std::string>(&v);
      if (s != nullptr && (*s == "seconds" || *s == "minutes" || *s == "hours")) {
        return Status::OK();
      }
      return Status(ErrorCode::kBadValue,
                    "hourglassHttpWriteGranularity must be 'seconds', 'minutes' or 'hours'");
    });
  }();
  return p;
}

void WriteOutcome::Drop(int64_t n, const std::string& why) {
  dropped += n;
  if (std::find(errors.begin(), errors.end(), why) == errors.end() && errors.size() < 10) {
    errors.push_back(why);
  }
}

void WriteMeasurements(commands::ServiceContext& service, commands::ClientState& client,
                       const std::string& db, const std::string& coll, std::string_view meta_field,
                       const std::vector<bson::BsonObj>& docs, WriteOutcome* out) {
  const std::string where = "measurement \"" + coll + "\": ";
  if (service.catalog->Lookup({db, coll}) == nullptr) {
    bson::BsonBuilder create;
    create.AppendString("create", coll);
    const size_t ts = create.OpenObject("timeseries");
    create.AppendString("timeField", "time");
    create.AppendString("metaField", meta_field);
    create.AppendString("granularity", HttpWriteGranularity()->GetString());
    create.Close(ts);
    auto created = commands::RunCommandForReply(service, client, create.Obj(), db);
    if (!created.ok() && created.status().code() != ErrorCode::kNamespaceExists) {
      if (AboutTheData(created.status())) {
        out->Drop(static_cast<int64_t>(docs.size()), where + created.status().reason());
      } else {
        out->fatal = created.status();
      }
      return;
    }
  }
  size_t i = 0;
  while (i < docs.size()) {
    bson::BsonBuilder insert;
    insert.AppendString("insert", coll);
    insert.AppendBool("ordered", false);
    const size_t arr = insert.OpenArray("documents");
    size_t n = 0, bytes = 0;
    for (; i < docs.size() && n < kInsertBatchCount && bytes < kInsertBatchBytes; ++i, ++n) {
      insert.AppendObject(std::to_string(n), docs[i]);
      bytes += static_cast<size_t>(docs[i].size());
    }
    insert.Close(arr);
    auto reply = commands::RunCommandForReply(service, client, insert.Obj(), db);
    if (!reply.ok()) {  // the documents' own faults come back as writeErrors, not here
      out->fatal = reply.status();
      return;
    }
    out->written += reply.value()["n"].NumberLong();
    if (reply.value()["writeErrors"].type() == bson::BsonType::kArray) {
      for (const bson::BsonElement& e : reply.value()["writeErrors"].Obj()) {
        const bson::BsonObj we = e.Obj();
        out->Drop(1, where + std::string(we["errmsg"].type() == bson::BsonType::kString
                                             ? we["errmsg"].Str()
                                             : "write failed"));
      }
    }
  }
}

}  // namespace hourglass::http

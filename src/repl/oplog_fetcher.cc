#include "repl/oplog_fetcher.h"

#include "repl/member_connection.h"

namespace hourglass::repl {

namespace {

using bson::BsonBuilder;
using bson::BsonElement;
using bson::BsonObj;
using bson::BsonType;

// The documents of a cursor reply's `batch_field` (firstBatch or nextBatch), and its id.
Status TakeBatch(const BsonObj& reply, std::string_view batch_field, std::vector<BsonObj>* docs,
                 int64_t* cursor_id) {
  BsonElement cursor = reply["cursor"];
  if (cursor.type() != BsonType::kObject || cursor.Obj()[batch_field].type() != BsonType::kArray) {
    return Status(ErrorCode::kHostUnreachable, "a cursor reply without its batch");
  }
  docs->clear();
  for (BsonElement e : cursor.Obj()[batch_field].Obj()) {
    if (e.type() == BsonType::kObject) docs->push_back(e.Obj().Owned());
  }
  *cursor_id = cursor.Obj()["id"].NumberLong();
  return Status::OK();
}

// Runs `cmd` (which opens a cursor) and its getMores on `coll` of `db` (batchSize `batch`, 0:
// the server's), handing `fn` each batch.
Status ReadCursor(MemberConnection& conn, const BsonObj& cmd, const std::string& db,
                  const std::string& coll, int32_t batch,
                  const std::function<Status(const std::vector<BsonObj>&)>& fn) {
  HG_ASSIGN_OR_RETURN(BsonObj reply, conn.Run(cmd));
  std::vector<BsonObj> docs;
  int64_t cursor_id = 0;
  HG_RETURN_IF_ERROR(TakeBatch(reply, "firstBatch", &docs, &cursor_id));
  while (true) {
    if (!docs.empty()) HG_RETURN_IF_ERROR(fn(docs));
    if (cursor_id == 0) return Status::OK();
    BsonBuilder more;
    more.AppendInt64("getMore", cursor_id);
    more.AppendString("collection", coll);
    if (batch > 0) more.AppendInt32("batchSize", batch);
    more.AppendString("$db", db);
    HG_ASSIGN_OR_RETURN(reply, conn.Run(more.Obj()));
    HG_RETURN_IF_ERROR(TakeBatch(reply, "nextBatch", &docs, &cursor_id));
  }
}

}  // namespace

Status FetchOplog(const std::string& host, const std::string& key, uint64_t from_ts, uint64_t to_ts,
                  const std::function<Status(const std::vector<BsonObj>&)>& fn) {
  MemberConnection conn;
  HG_RETURN_IF_ERROR(conn.Open(host));
  HG_RETURN_IF_ERROR(conn.Login(key));
  BsonBuilder find;
  find.AppendString("find", "oplog.rs");
  size_t filter = find.OpenObject("filter");
  size_t ts = find.OpenObject("ts");
  find.AppendTimestamp("$gte", from_ts);
  find.AppendTimestamp("$lte", to_ts);
  find.Close(ts);
  find.Close(filter);
  size_t sort = find.OpenObject("sort");
  find.AppendInt32("$natural", 1);
  find.Close(sort);
  find.AppendInt32("batchSize", 1000);
  find.AppendString("$db", "local");
  size_t pref = find.OpenObject("$readPreference");
  find.AppendString("mode", "primaryPreferred");
  find.Close(pref);
  return ReadCursor(conn, find.Obj(), "local", "oplog.rs", 1000, fn);
}

Status FetchCopy(const std::string& host, const std::string& key, uint64_t from_ts,
                 const std::function<Status(const std::vector<BsonObj>&)>& fn) {
  MemberConnection conn;
  HG_RETURN_IF_ERROR(conn.Open(host));
  HG_RETURN_IF_ERROR(conn.Login(key));
  BsonBuilder cmd;
  cmd.AppendInt32("hgCloneSnapshot", 1);
  cmd.AppendTimestamp("from", from_ts);
  cmd.AppendString("$db", "admin");
  // Batches of up to 16 MiB (the server's limit), whatever their count.
  return ReadCursor(conn, cmd.Obj(), "admin", "$cmd.hgCloneSnapshot", 0, fn);
}

}  // namespace hourglass::repl

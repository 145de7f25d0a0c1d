#include "http/prometheus_remote.h"

#include <snappy.h>

#include <algorithm>
#include <map>

#include "catalog/catalog.h"
#include "catalog/collection.h"
#include "commands/dispatcher.h"
#include "http/measurement_writer.h"
#include "prometheus_remote.pb.h"
#include "query/regex.h"

namespace hourglass::http {

namespace {

// What a remote-write body may inflate to (Prometheus sends a few megabytes at most).
constexpr size_t kMaxUncompressedBytes = size_t{64} << 20;
// What one remote read may answer (Prometheus's own remote_read_sample_limit is 5e7).
constexpr size_t kMaxReadSamples = 20'000'000;

Status Bad(std::string what) { return Status(ErrorCode::kBadValue, std::move(what)); }

// Prometheus's names: labels [a-zA-Z_][a-zA-Z0-9_]*, metrics the same with ':' too. They become
// field names (and collection names), so nothing else may pass.
bool ValidName(std::string_view name, bool metric) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (metric && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

StatusWith<std::string> Unsnappy(std::string_view body) {
  size_t length = 0;
  if (!snappy::GetUncompressedLength(body.data(), body.size(), &length)) {
    return Bad("snappy: corrupt input");
  }
  if (length > kMaxUncompressedBytes) return Bad("snappy: decoded body too large");
  std::string raw;
  if (!snappy::Uncompress(body.data(), body.size(), &raw)) return Bad("snappy: corrupt input");
  return raw;
}

// A matcher's regex as Prometheus means it: anchored at both ends.
StatusWith<query::Regex> Anchored(const std::string& pattern) {
  auto re = query::Regex::Compile("^(?:" + pattern + ")\\z", "");
  if (!re.ok()) return Bad("invalid regex \"" + pattern + "\": " + re.status().reason());
  return re;
}

// Whether the metric `name` (never empty) passes the matcher.
StatusWith<bool> NameMatches(const prompb::LabelMatcher& m, const std::string& name) {
  switch (m.type()) {
    case prompb::LabelMatcher::EQ:
      return name == m.value();
    case prompb::LabelMatcher::NEQ:
      return name != m.value();
    default: {
      HG_ASSIGN_OR_RETURN(query::Regex re, Anchored(m.value()));
      return re.Matches(name) == (m.type() == prompb::LabelMatcher::RE);
    }
  }
}

// The filter of one label matcher on the metaField; a missing label is "" to Prometheus.
StatusWith<bson::BsonObj> LabelFilter(const prompb::LabelMatcher& m) {
  if (!ValidName(m.name(), false)) return Bad("invalid label name \"" + m.name() + "\"");
  const std::string path = std::string(kPrometheusMetaField) + "." + m.name();
  bson::BsonBuilder b;
  auto exists = [&](bool yes) {
    const size_t t = b.OpenObject(path);
    b.AppendBool("$exists", yes);
    b.Close(t);
  };
  switch (m.type()) {
    case prompb::LabelMatcher::EQ:
      if (m.value().empty()) {
        exists(false);
      } else {
        b.AppendString(path, m.value());
      }
      break;
    case prompb::LabelMatcher::NEQ:
      if (m.value().empty()) {
        exists(true);
      } else {
        const size_t t = b.OpenObject(path);
        b.AppendString("$ne", m.value());  // a missing label ("") differs too
        b.Close(t);
      }
      break;
    case prompb::LabelMatcher::RE:
    case prompb::LabelMatcher::NRE: {
      HG_ASSIGN_OR_RETURN(query::Regex re, Anchored(m.value()));
      const bool missing_matches = re.Matches("");
      const bool negated = m.type() == prompb::LabelMatcher::NRE;
      bson::BsonBuilder cond;
      const size_t t = cond.OpenObject(path);
      if (negated) {
        const size_t n = cond.OpenObject("$not");
        cond.AppendString("$regex", "^(?:" + m.value() + ")\\z");
        cond.Close(n);
      } else {
        cond.AppendString("$regex", "^(?:" + m.value() + ")\\z");
      }
      cond.Close(t);
      // $regex never matches a missing field and $not always does; Prometheus decides by "".
      if (missing_matches) {
        const size_t all = b.OpenArray(negated ? "$and" : "$or");
        b.AppendObject("0", cond.Obj());
        bson::BsonBuilder missing;
        const size_t e = missing.OpenObject(path);
        missing.AppendBool("$exists", negated);
        missing.Close(e);
        b.AppendObject("1", missing.Obj());
        b.Close(all);
      } else {
        return cond.Obj();
      }
      break;
    }
    default:
      return Bad("unknown label matcher type " + std::to_string(m.type()));
  }
  return b.Obj();
}

// The series of one collection within the query, in the response's shape.
Status ReadCollection(commands::ServiceContext& service, commands::ClientState& client,
                      const std::string& db, const std::string& coll, const prompb::Query& q,
                      const std::vector<bson::BsonObj>& label_filters, size_t* samples,
                      prompb::QueryResult* out) {
  bson::BsonBuilder find;
  find.AppendString("find", coll);
  const size_t filter = find.OpenObject("filter");
  const size_t all = find.OpenArray("$and");
  {
    bson::BsonBuilder range;
    const size_t t = range.OpenObject("time");
    range.AppendDate("$gte", q.start_timestamp_ms());
    range.AppendDate("$lte", q.end_timestamp_ms());
    range.Close(t);
    find.AppendObject("0", range.Obj());
  }
  for (size_t i = 0; i < label_filters.size(); ++i) {
    find.AppendObject(std::to_string(i + 1), label_filters[i]);
  }
  find.Close(all);
  find.Close(filter);
  const size_t sort = find.OpenObject("sort");
  find.AppendInt32(kPrometheusMetaField, 1);
  find.AppendInt32("time", 1);
  find.Close(sort);
  find.AppendInt64("batchSize", 100000);
  HG_ASSIGN_OR_RETURN(bson::BsonObj reply,
                      commands::RunCommandForReply(service, client, find.Obj(), db));
  std::string last_labels;  // the bytes of the current series' labels
  prompb::TimeSeries* series = nullptr;
  for (;;) {
    const bson::BsonObj cursor = reply["cursor"].Obj();
    const bson::BsonElement batch =
        cursor["firstBatch"].eoo() ? cursor["nextBatch"] : cursor["firstBatch"];
    for (const bson::BsonElement& e : batch.Obj()) {
      const bson::BsonObj doc = e.Obj();
      const bson::BsonElement labels = doc[kPrometheusMetaField];
      const std::string key = labels.type() == bson::BsonType::kObject
                                  ? std::string(labels.Obj().bytes())
                                  : std::string();
      if (series == nullptr || key != last_labels) {
        last_labels = key;
        series = out->add_timeseries();
        std::vector<std::pair<std::string, std::string>> sorted = {{"__name__", coll}};
        if (labels.type() == bson::BsonType::kObject) {
          for (const bson::BsonElement& l : labels.Obj()) {
            if (l.type() == bson::BsonType::kString) {
              sorted.emplace_back(std::string(l.FieldName()), std::string(l.Str()));
            }
          }
        }
        std::sort(sorted.begin(), sorted.end());
        for (auto& [name, value] : sorted) {
          prompb::Label* l = series->add_labels();
          l->set_name(name);
          l->set_value(value);
        }
      }
      const bson::BsonElement value = doc["value"];
      if (!value.IsNumber()) continue;  // not a sample Prometheus wrote
      if (++*samples > kMaxReadSamples) {
        return Bad("the read selects more than " + std::to_string(kMaxReadSamples) +
                   " samples: narrow its time range or matchers");
      }
      prompb::Sample* s = series->add_samples();
      s->set_timestamp(doc["time"].DateMillis());
      s->set_value(value.NumberDouble());
    }
    const int64_t id = cursor["id"].NumberLong();
    if (id == 0) return Status::OK();
    bson::BsonBuilder more;
    more.AppendInt64("getMore", id);
    more.AppendString("collection", coll);
    more.AppendInt64("batchSize", 100000);
    HG_ASSIGN_OR_RETURN(reply, commands::RunCommandForReply(service, client, more.Obj(), db));
  }
}

}  // namespace

StatusWith<std::vector<MetricSamples>> DecodeRemoteWrite(std::string_view body) {
  HG_ASSIGN_OR_RETURN(std::string raw, Unsnappy(body));
  prompb::WriteRequest request;
  if (!request.ParseFromString(raw)) return Bad("not a valid protobuf WriteRequest");
  std::vector<MetricSamples> out;
  std::map<std::string, size_t, std::less<>> index;
  for (const prompb::TimeSeries& series : request.timeseries()) {
    if (!series.GetReflection()->GetUnknownFields(series).empty()) {
      return Bad("exemplars and native histograms are not supported: send samples only");
    }
    std::string metric;
    std::vector<std::pair<std::string_view, std::string_view>> labels;
    for (const prompb::Label& l : series.labels()) {
      if (l.name() == "__name__") {
        metric = l.value();
      } else if (!ValidName(l.name(), false)) {
        return Bad("invalid label name \"" + l.name() + "\"");
      } else if (!l.value().empty()) {  // Prometheus's empty label is no label
        labels.emplace_back(l.name(), l.value());
      }
    }
    if (metric.empty()) return Bad("a series has no metric name (label __name__)");
    if (!ValidName(metric, true)) return Bad("invalid metric name \"" + metric + "\"");
    std::sort(labels.begin(), labels.end());
    for (size_t i = 1; i < labels.size(); ++i) {
      if (labels[i].first == labels[i - 1].first) {
        return Bad("duplicate label name \"" + std::string(labels[i].first) + "\"");
      }
    }
    // The series' labels, built once for its samples.
    bson::BsonBuilder meta;
    for (const auto& [name, value] : labels) meta.AppendString(name, value);
    const bson::BsonObj meta_obj = meta.Obj();
    auto [it, added] = index.try_emplace(metric, out.size());
    if (added) out.push_back(MetricSamples{metric, {}});
    std::vector<bson::BsonObj>& docs = out[it->second].docs;
    for (const prompb::Sample& sample : series.samples()) {
      bson::BsonBuilder doc;
      doc.AppendDate("time", sample.timestamp());
      if (!labels.empty()) doc.AppendObject(kPrometheusMetaField, meta_obj);
      doc.AppendDouble("value", sample.value());
      docs.push_back(doc.Obj());
    }
  }
  return out;
}

StatusWith<std::string> AnswerRemoteRead(commands::ServiceContext& service,
                                         commands::ClientState& client, const std::string& db,
                                         std::string_view body) {
  HG_ASSIGN_OR_RETURN(std::string raw, Unsnappy(body));
  prompb::ReadRequest request;
  if (!request.ParseFromString(raw)) return Bad("not a valid protobuf ReadRequest");
  prompb::ReadResponse response;
  size_t samples = 0;
  for (const prompb::Query& q : request.queries()) {
    std::vector<const prompb::LabelMatcher*> name_matchers;
    std::vector<bson::BsonObj> label_filters;
    for (const prompb::LabelMatcher& m : q.matchers()) {
      if (m.name() == "__name__") {
        name_matchers.push_back(&m);
      } else {
        HG_ASSIGN_OR_RETURN(bson::BsonObj f, LabelFilter(m));
        label_filters.push_back(std::move(f));
      }
    }
    prompb::QueryResult* result = response.add_results();
    for (const auto& c : service.catalog->ListCollections(db)) {
      if (c->entry().type != "timeseries") continue;
      const std::string& name = c->nss().coll;
      bool wanted = true;
      for (const prompb::LabelMatcher* m : name_matchers) {
        HG_ASSIGN_OR_RETURN(bool matches, NameMatches(*m, name));
        wanted = wanted && matches;
      }
      if (!wanted) continue;
      Status st = ReadCollection(service, client, db, name, q, label_filters, &samples, result);
      if (!st.ok() && st.code() != ErrorCode::kNamespaceNotFound) return st;  // dropped since
    }
  }
  std::string serialized;
  if (!response.SerializeToString(&serialized)) {
    return Status(ErrorCode::kInternalError, "cannot serialize the ReadResponse");
  }
  std::string compressed;
  snappy::Compress(serialized.data(), serialized.size(), &compressed);
  return compressed;
}

}  // namespace hourglass::http

// In-process timing of the BSONColumn decoders and encoder on the columns of a TSBS cpu-only
// bucket (what `ts_bench ingest` writes): 360 rows of a random-walk double (N(0,1) steps clamped
// to [0, 100], full precision), the time column (a date every 10 s), and for comparison a small
// int64 counter, 2-decimal doubles, and whole numbers 0-100 drawn at random as doubles (the
// peers' rows, ../shared/peers/gen_cpu.py). For each: ns per cell to decode into elements
// (DecodeBsonColumnElements, what a version-1 read gets without decoding), into numbers
// (DecodeBsonColumnValues), and to encode (BsonColumnBuilder, what compressing a closed bucket
// does per column).
//   column_decode_bench [--rows 360] [--iters 4000]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bson/bson.h"
#include "bsoncolumn/bson_column_builder.h"
#include "bsoncolumn/bson_column_decoder.h"

using hourglass::bson::BsonBuilder;
using hourglass::bson::BsonObj;
namespace bc = hourglass::bsoncolumn;

namespace {

std::string Column(const std::vector<BsonObj>& values) {
  bc::BsonColumnBuilder b;
  for (const BsonObj& v : values) {
    if (!b.Append(v.FirstElement()).ok()) std::abort();
  }
  return b.Finish();
}

// The best of 5 rounds of `iters` calls (the machine is shared), in ns per cell.
template <typename F>
double NsPerCell(int iters, size_t cells, F f) {
  for (int i = 0; i < iters / 10; ++i) f();
  double best = 1e300;
  for (int round = 0; round < 5; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) f();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / iters /
                              static_cast<double>(cells));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int rows = 360, iters = 4000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rows")) rows = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
  }
  std::mt19937_64 rng(1);
  std::normal_distribution<double> step(0.0, 1.0);
  std::vector<BsonObj> walk, time, counter, cents, whole;
  double w = 50;
  for (int r = 0; r < rows; ++r) {
    w = std::clamp(w + step(rng), 0.0, 100.0);
    BsonBuilder a, t, c, d, u;
    a.AppendDouble("", w);
    t.AppendDate("", 1451606400000LL + 10000LL * r);
    c.AppendInt64("", 1000 + r * 3 + static_cast<int64_t>(rng() % 5));
    d.AppendDouble("", std::round(w * 100) / 100);
    u.AppendDouble("", static_cast<double>(rng() % 101));
    walk.push_back(a.Obj());
    time.push_back(t.Obj());
    counter.push_back(c.Obj());
    cents.push_back(d.Obj());
    whole.push_back(u.Obj());
  }
  struct Case {
    const char* name;
    const std::vector<BsonObj>* cells;
    std::string binary;
  } cases[] = {{"double_walk", &walk, Column(walk)},
               {"time", &time, Column(time)},
               {"int64_counter", &counter, Column(counter)},
               {"double_2dp", &cents, Column(cents)},
               {"double_whole", &whole, Column(whole)}};
  bc::ColumnElements elements;
  bc::ColumnValues values;
  for (const Case& c : cases) {
    const double e = NsPerCell(iters, rows, [&] {
      if (!bc::DecodeBsonColumnElements(c.binary, &elements, rows, rows + 1).ok()) std::abort();
    });
    const double v = NsPerCell(iters, rows, [&] {
      if (!bc::DecodeBsonColumnValues(c.binary, &values, rows, rows + 1).ok()) std::abort();
    });
    const double enc = NsPerCell(iters / 4, rows, [&] {
      if (Column(*c.cells) != c.binary) std::abort();
    });
    std::printf(
        "RESULT column=%s rows=%d bytes=%zu elements_ns_per_cell=%.2f values_ns_per_cell=%.2f "
        "typed=%d encode_ns_per_cell=%.2f\n",
        c.name, rows, c.binary.size(), e, v, values.type != hourglass::bson::BsonType::kEOO, enc);
  }
  return 0;
}

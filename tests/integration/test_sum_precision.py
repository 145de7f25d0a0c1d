"""$sum and $avg of doubles as MongoDB computes them: a double-double running sum.

MongoDB adds the non-decimal numbers of $sum and $avg (in $group and in $setWindowFields) with
error-free transformations (Fast2Sum of the value and the running addend, then 2Sum into the
running sum) and answers the running sum's leading double; 64-bit integers enter as two halves
of at most 32 significant bits. The oracle below applies those steps with Python floats (IEEE
doubles), so every double result must match it bit for bit, on regular collections, on
time-series collections (whose $group folds bucket columns, several $sum/$avg at once), and in
windows. Plain left-to-right addition gives other answers for most of these inputs, which the
tests check too, so that they tell the two apart.
"""

import datetime
import math
import random

import pytest
from bson.int64 import Int64

UTC = datetime.timezone.utc
T0 = datetime.datetime(2024, 5, 1, tzinfo=UTC)


class DoubleDouble:
    """MongoDB's running sum of doubles (an unevaluated pair: sum and addend)."""

    def __init__(self):
        self.sum = 0.0
        self.addend = 0.0
        self.plain = 0.0

    def add(self, x):
        self.plain += x
        folded = x + self.addend
        self.addend = self.addend - (folded - x)
        s = self.sum + folded
        sum_part = s - folded
        folded_part = s - sum_part
        self.addend += (self.sum - sum_part) + (folded - folded_part)
        self.sum = s

    def add_number(self, v):
        if isinstance(v, Int64):
            high = int(v) // 2**32 * 2**32 if v >= 0 else -((-int(v)) // 2**32 * 2**32)
            self.add(float(int(v) - high))
            self.add(float(high))
        else:
            self.add(float(v))

    def result(self):
        return self.plain if math.isnan(self.sum) else self.sum


def oracle(values):
    """{"s": $sum, "a": $avg} of `values` (numbers; None skipped) as MongoDB gives them."""
    dd = DoubleDouble()
    numbers = [v for v in values if v is not None]
    for v in numbers:
        dd.add_number(v)
    return {"s": dd.result(), "a": dd.result() / len(numbers) if numbers else None}


def test_the_classic_cases(db):
    db.c.insert_many([{"v": 0.1}, {"v": 0.2}, {"v": 0.3}])
    got = list(db.c.aggregate([{"$group": {"_id": None, "s": {"$sum": "$v"},
                                           "a": {"$avg": "$v"}}}]))
    assert got == [{"_id": None, "s": 0.6, "a": 0.6 / 3}]
    assert 0.1 + 0.2 + 0.3 != 0.6  # what plain addition gives instead
    # The $sum and $avg expressions add as the accumulators do.
    got = list(db.c.aggregate([{"$limit": 1}, {"$project": {
        "_id": 0, "s": {"$sum": [[0.1, 0.2, 0.3]]}, "a": {"$avg": [0.1, 0.2, 0.3]}}}]))
    assert got == [{"s": 0.6, "a": 0.6 / 3}]
    db.d.insert_many([{"v": 0.1} for _ in range(10)])
    got = list(db.d.aggregate([{"$group": {"_id": None, "s": {"$sum": "$v"}}}]))
    assert got == [{"_id": None, "s": 1.0}]
    # Integers beyond 2^53 keep every bit until the result is rounded once.
    db.e.insert_many([{"v": Int64(2**62 + 1)}, {"v": Int64(2**62 + 1)}, {"v": 0.5}])
    got = list(db.e.aggregate([{"$group": {"_id": None, "s": {"$sum": "$v"}}}]))
    assert got == [{"_id": None, "s": float(2**63)}]
    assert got[0]["s"] == oracle([Int64(2**62 + 1), Int64(2**62 + 1), 0.5])["s"]


def random_values(rng, n):
    out = []
    for _ in range(n):
        kind = rng.randrange(10)
        if kind == 0:
            out.append(rng.randrange(-1000, 1000))
        elif kind == 1:
            out.append(Int64(rng.randrange(-2**62, 2**62)))
        elif kind == 2:
            out.append(None)
        elif kind == 3:
            out.append(rng.uniform(-1e12, 1e12))
        else:
            out.append(rng.uniform(0, 100))
    return out


def test_group_sums_match_mongodb_bit_for_bit(db):
    rng = random.Random(11)
    docs, by_key = [], {}
    for i in range(3000):
        k = i % 7
        v = random_values(rng, 1)[0]
        by_key.setdefault(k, []).append(v)
        docs.append({"_id": i, "k": k, "v": v})
    db.c.insert_many(docs)
    got = {d["_id"]: d for d in db.c.aggregate(
        [{"$sort": {"_id": 1}},
         {"$group": {"_id": "$k", "s": {"$sum": "$v"}, "a": {"$avg": "$v"}}}])}
    plain_differs = 0
    for k, values in by_key.items():
        want = oracle(values)
        assert got[k]["s"] == want["s"] and got[k]["a"] == want["a"], (k, got[k], want)
        plain = 0.0
        for v in values:
            plain += float(v) if v is not None else 0.0
        plain_differs += plain != want["s"]
    assert plain_differs > 0


def time_series_docs(rng, hosts, per_host, columns, gaps):
    docs = []
    for h in range(hosts):
        for i in range(per_host):
            d = {"t": T0 + datetime.timedelta(seconds=10 * i), "tags": {"host": "h%d" % h}}
            for c in range(columns):
                if gaps and rng.randrange(9) == 0:
                    continue  # a missing cell: that column takes the general path
                d["c%d" % c] = rng.uniform(0, 100) if c % 3 else rng.uniform(-1e9, 1e9)
            docs.append(d)
    return docs


@pytest.mark.parametrize("gaps", [False, True], ids=["full", "gaps"])
def test_time_series_block_sums_match_mongodb_bit_for_bit(db, gaps):
    """A $group of 14 $avg/$sum per host and hour folds bucket columns several at once; each
    must equal the oracle over the measurements in time order."""
    rng = random.Random(5 if gaps else 6)
    columns = 7
    db.create_collection("ts", timeseries={"timeField": "t", "metaField": "tags"})
    docs = time_series_docs(rng, hosts=4, per_host=900, columns=columns, gaps=gaps)
    db.ts.insert_many(docs)
    acc = {}
    for c in range(columns):
        acc["a%d" % c] = {"$avg": "$c%d" % c}
        acc["s%d" % c] = {"$sum": "$c%d" % c}
    pipeline = [{"$group": {"_id": {"host": "$tags.host",
                                    "hour": {"$dateTrunc": {"date": "$t", "unit": "hour"}}},
                            **acc}}]
    got = {(d["_id"]["host"], d["_id"]["hour"].replace(tzinfo=UTC)): d
           for d in db.ts.aggregate(pipeline)}
    groups = {}
    for d in sorted(docs, key=lambda d: (d["tags"]["host"], d["t"])):
        hour = d["t"].replace(minute=0, second=0)
        groups.setdefault((d["tags"]["host"], hour), []).append(d)
    assert set(got) == set(groups)
    for key, rows in groups.items():
        for c in range(columns):
            want = oracle([r.get("c%d" % c) for r in rows])
            assert got[key]["s%d" % c] == want["s"], (key, c)
            assert got[key]["a%d" % c] == want["a"], (key, c)


def test_window_sums_match_mongodb(db):
    rng = random.Random(3)
    values = [rng.uniform(0, 1) for _ in range(200)]
    db.c.insert_many([{"_id": i, "v": v} for i, v in enumerate(values)])
    got = list(db.c.aggregate([{"$setWindowFields": {
        "sortBy": {"_id": 1},
        "output": {"s": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}}}}}]))
    dd = DoubleDouble()
    for i, d in enumerate(got):
        dd.add(values[i])
        assert d["s"] == dd.result(), i

"""$push, $addToSet and $stdDevPop/$stdDevSamp over large groups, on regular and time-series
collections (where $group folds bucket columns).

MongoDB's rules: $push keeps every value in input order and skips missing ones; $addToSet keeps
one of each set of equal values (1, 1.0 and NumberLong(1) are one; under a collation, strings it
calls equal are one; the order of the result is unspecified); $stdDevPop/$stdDevSamp ignore
non-numbers and give null for too few numbers. The expectations are computed here from the
inserted documents.
"""

import datetime
import math
import random
import statistics

import pytest
from bson.int64 import Int64

UTC = datetime.timezone.utc
T0 = datetime.datetime(2024, 6, 1, tzinfo=UTC)


def canon(v):
    """A hashable stand-in for a value under $addToSet's equality (numbers by value)."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, (int, float, Int64)):
        return ("num", float(v))
    return ("other", repr(v))


def make_docs(rng, n, hosts):
    docs = []
    for i in range(n):
        d = {"t": T0 + datetime.timedelta(seconds=5 * i), "h": "h%d" % (i % hosts)}
        kind = rng.randrange(7)
        if kind == 0:
            d["v"] = rng.randrange(50)
        elif kind == 1:
            d["v"] = Int64(rng.randrange(50))
        elif kind == 2:
            d["v"] = float(rng.randrange(50))  # equal to the integers above
        elif kind == 3:
            d["v"] = "s%d" % rng.randrange(20)
        elif kind == 4:
            d["v"] = rng.uniform(0, 1000)  # mostly distinct
        elif kind == 5:
            pass  # missing
        else:
            d["v"] = None
        d["x"] = rng.gauss(50, 10)
        docs.append(d)
    return docs


@pytest.mark.parametrize("kind", ["regular", "timeseries"])
def test_push_add_to_set_and_std_dev_over_large_groups(db, kind):
    rng = random.Random(8)
    docs = make_docs(rng, 12000, hosts=3)
    if kind == "timeseries":
        db.create_collection("c", timeseries={"timeField": "t", "metaField": "h"})
    db.c.insert_many([dict(d) for d in docs])
    # On the time-series collection the $group reads the buckets (one series per host, in
    # time order) column by column; on the regular one a $sort gives the same order.
    order = [] if kind == "timeseries" else [{"$sort": {"t": 1}}]
    got = {d["_id"]: d for d in db.c.aggregate(order + [
        {"$group": {"_id": "$h", "p": {"$push": "$v"}, "s": {"$addToSet": "$v"},
                    "sp": {"$stdDevPop": "$x"}, "ss": {"$stdDevSamp": "$x"},
                    "sv": {"$stdDevPop": "$v"}}}])}
    assert sorted(got) == ["h0", "h1", "h2"]
    for h in got:
        rows = [d for d in docs if d["h"] == h]
        present = [d["v"] for d in rows if "v" in d]
        assert got[h]["p"] == present  # in input order, missing skipped, null kept
        kept = got[h]["s"]
        assert len(kept) == len({canon(v) for v in kept})  # no two equal
        assert {canon(v) for v in kept} == {canon(v) for v in present}
        xs = [d["x"] for d in rows]
        assert math.isclose(got[h]["sp"], statistics.pstdev(xs), rel_tol=1e-12)
        assert math.isclose(got[h]["ss"], statistics.stdev(xs), rel_tol=1e-12)
        nums = [float(v) for v in present
                if isinstance(v, (int, float, Int64)) and not isinstance(v, bool)]
        assert math.isclose(got[h]["sv"], statistics.pstdev(nums), rel_tol=1e-12)


def test_add_to_set_keeps_the_first_of_equal_values(db):
    db.c.insert_many([{"_id": i, "v": v} for i, v in enumerate(
        [1.0, 1, Int64(1), "a", "A", 2, "a", None, None, [1, 2], [1, 2], {"k": 1}, {"k": 1.0}])])
    [got] = db.c.aggregate([{"$sort": {"_id": 1}},
                            {"$group": {"_id": None, "s": {"$addToSet": "$v"}}}])
    s = got["s"]
    assert len(s) == 7
    assert s.count(None) == 1 and "a" in s and "A" in s and [1, 2] in s
    assert any(isinstance(v, float) and v == 1 for v in s)  # 1.0 came first
    ci = {"locale": "en", "strength": 2}
    [got] = db.c.aggregate([{"$sort": {"_id": 1}},
                            {"$group": {"_id": None, "s": {"$addToSet": "$v"}}}], collation=ci)
    strings = [v for v in got["s"] if isinstance(v, str)]
    assert strings == ["a"]  # "A" equals "a" under the collation


def test_std_dev_of_too_few_numbers_is_null(db):
    db.c.insert_many([{"g": 1, "v": 5}, {"g": 1, "v": "x"}, {"g": 2, "v": "y"}])
    got = {d["_id"]: d for d in db.c.aggregate([
        {"$group": {"_id": "$g", "p": {"$stdDevPop": "$v"}, "s": {"$stdDevSamp": "$v"}}}])}
    assert got[1] == {"_id": 1, "p": 0.0, "s": None}
    assert got[2] == {"_id": 2, "p": None, "s": None}

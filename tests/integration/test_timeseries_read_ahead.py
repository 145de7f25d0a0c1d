"""Reading ahead for $group on time-series collections (issue 17, "each TSBS query at 4,000 hosts").

While a $group folds one bucket's columns, a helper thread reads and decodes the next buckets
(`pipeline/block_read_ahead.h`). The buckets still reach the $group in the scan's order, so
every answer must be exactly the one read without it (`hourglassBlockReadAheadBlocks: 0`), the
order-sensitive accumulators ($first, $last, $push) and double sums included, on compressed and
on version-1 buckets, with and without filters, and an error raised while reading ahead must
reach the client as it does without. `serverStatus().hourglass.timeseries.bucketsReadAhead`
shows which buckets were read on the helper.
"""

import datetime
import random
import threading

import pytest
from pymongo.errors import OperationFailure

UTC = datetime.timezone.utc
T0 = datetime.datetime(2024, 5, 1, tzinfo=UTC)
SERIES = 40
STEPS = 700  # one measurement per series every 20 s: each series spans several buckets
PARAM = "hourglassBlockReadAheadBlocks"


def measurements():
    rng = random.Random(17)
    docs = []
    for step in range(STEPS):
        for s in range(SERIES):
            d = {"t": T0 + datetime.timedelta(seconds=20 * step + s % 7),
                 "tags": {"host": "h%02d" % s, "rack": s % 4},
                 "u": rng.random() * 100, "k": rng.randrange(1000)}
            if rng.randrange(10) == 0:
                del d["u"]  # missing cells
            if rng.randrange(50) == 0:
                d["u"] = "text"  # a type change inside a column
            docs.append(d)
    return docs


@pytest.fixture(scope="module")
def docs():
    return measurements()


def load(db, docs):
    db.create_collection("cpu", timeseries={"timeField": "t", "metaField": "tags",
                                            "bucketMaxSpanSeconds": 1200,
                                            "bucketRoundingSeconds": 1200})
    db.cpu.insert_many([dict(d) for d in docs], ordered=False)
    return db.cpu


def read_ahead_count(db):
    return db.client.admin.command("serverStatus")["hourglass"]["timeseries"]["bucketsReadAhead"]


def set_depth(db, n):
    db.client.admin.command({"setParameter": 1, PARAM: n})


HOUR = {"$dateTrunc": {"date": "$t", "unit": "minute", "binSize": 30}}
PIPELINES = [
    [{"$group": {"_id": "$tags.host", "s": {"$sum": "$u"}, "a": {"$avg": "$u"},
                 "n": {"$count": {}}, "mx": {"$max": "$k"}}}],
    [{"$group": {"_id": {"host": "$tags.host", "bin": HOUR},
                 "first": {"$first": "$u"}, "last": {"$last": "$k"}, "mn": {"$min": "$u"}}}],
    [{"$group": {"_id": "$tags.rack", "p": {"$push": "$k"}, "ft": {"$first": "$t"},
                 "lt": {"$last": "$t"}}}],
    [{"$match": {"k": {"$gte": 100, "$lt": 900}}},
     {"$group": {"_id": HOUR, "s": {"$sum": "$u"}, "m": {"$max": "$u"}}}],
    [{"$match": {"$expr": {"$lt": ["$k", {"$multiply": ["$tags.rack", 300]}]}}},
     {"$group": {"_id": "$tags", "s": {"$sum": {"$multiply": ["$k", 2]}}, "l": {"$last": "$u"}}}],
    [{"$match": {"t": {"$gte": T0 + datetime.timedelta(hours=1)}}},
     {"$group": {"_id": None, "s": {"$sum": "$u"}, "n": {"$sum": 1}}}],
    # A projection between the scan and the $group reads ahead of itself.
    [{"$set": {"bin": HOUR, "k2": {"$multiply": ["$k", 2]}}},
     {"$group": {"_id": {"host": "$tags.host", "bin": "$bin"}, "s": {"$sum": "$k2"},
                 "first": {"$first": "$u"}}}],
    [{"$match": {"k": {"$gte": 100}}},
     {"$project": {"host": "$tags.host", "u": 1, "x": {"$add": ["$k", 1]}}},
     {"$group": {"_id": "$host", "p": {"$push": "$x"}, "l": {"$last": "$u"}}}],
]
IDS = ["by-host", "host-bin-order", "push-order", "column-filter", "expr-filter", "time-range",
       "set-before", "project-before"]


def answers(coll, pipeline):
    return list(coll.aggregate(pipeline + [{"$sort": {"_id": 1}}]))


def check_same_with_and_without(db, coll, pipeline):
    set_depth(db, 16)
    try:
        before = read_ahead_count(db)
        ahead = answers(coll, pipeline)
        read_ahead = read_ahead_count(db) - before
        set_depth(db, 0)
        before = read_ahead_count(db)
        direct = answers(coll, pipeline)
        assert read_ahead_count(db) == before, "reading ahead is off at depth 0"
    finally:
        set_depth(db, 16)
    assert ahead == direct
    assert len(ahead) > 0
    return read_ahead


@pytest.mark.parametrize("pipeline", PIPELINES, ids=IDS)
def test_same_answers_with_and_without_reading_ahead(db, docs, pipeline):
    coll = load(db, docs)
    read_ahead = check_same_with_and_without(db, coll, pipeline)
    # Hundreds of buckets: all but the first few are read on the helper (one test at a time
    # uses the server's helper here).
    assert read_ahead > 100


@pytest.mark.parametrize("pipeline", PIPELINES[:3], ids=IDS[:3])
def test_same_answers_on_version_1_buckets(db_v1, docs, pipeline):
    coll = load(db_v1, docs)
    assert db_v1["system.buckets.cpu"].find_one()["control"]["version"] == 1
    assert check_same_with_and_without(db_v1, coll, pipeline) > 100


def test_answers_match_the_document_path(db, docs):
    # The $group after a stage that cannot pass columns on reads documents, in the same order.
    coll = load(db, docs)
    for pipeline in PIPELINES:
        group = pipeline[-1]
        documents = pipeline[:-1] + [{"$replaceWith": "$$ROOT"}, group]
        assert answers(coll, pipeline) == answers(coll, documents)


def test_an_error_while_reading_ahead_reaches_the_client(db, docs):
    coll = load(db, docs)
    # The newest measurement has k = 0: the filter divides by it in the last bucket the scan
    # reads, long after the helper took over.
    last = max(docs, key=lambda d: d["t"])
    db.cpu.insert_one({"t": last["t"] + datetime.timedelta(seconds=1), "tags": last["tags"],
                       "u": 1.0, "k": 0})
    pipeline = [{"$match": {"$expr": {"$gt": [{"$divide": [1000, "$k"]}, 1]}}},
                {"$group": {"_id": "$tags.host", "s": {"$sum": "$u"}}}]
    codes = []
    for depth in (16, 0):
        set_depth(db, depth)
        try:
            before = read_ahead_count(db)
            with pytest.raises(OperationFailure) as e:
                answers(coll, pipeline)
            codes.append((e.value.code, read_ahead_count(db) > before))
        finally:
            set_depth(db, 16)
    # $divide's "can't $divide by zero", read ahead (on the helper) and directly.
    assert codes == [(16608, True), (16608, False)]
    # The server goes on answering, and the collection reads as before.
    assert coll.count_documents({}) == len(docs) + 1


def test_concurrent_groups_all_answer_right(db, docs):
    # Only one of them gets the helper at a time; the others read directly.
    coll = load(db, docs)
    expected = [answers(coll, p) for p in PIPELINES]
    errors = []

    def worker(i):
        try:
            for _ in range(3):
                p = PIPELINES[i % len(PIPELINES)]
                assert answers(coll, p) == expected[i % len(PIPELINES)]
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


@pytest.mark.parametrize("bad", [-1, 1025, "eight"])
def test_depth_parameter_is_validated(db, bad):
    with pytest.raises(OperationFailure) as e:
        db.client.admin.command({"setParameter": 1, PARAM: bad})
    assert e.value.code == 2
    assert PARAM in str(e.value)
    # The bad value changed nothing.
    assert db.client.admin.command({"getParameter": 1, PARAM: 1})[PARAM] == 16

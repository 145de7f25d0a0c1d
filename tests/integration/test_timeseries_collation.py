"""Collations on time-series collections, as MongoDB 7.0 has them: a collection created with a
`collation` lists it (on the view and on system.buckets.X) and takes it as the default of every
read, write and index that names none; a read or write may name another collation, and then the
buckets' control.min/max (computed under the collection's collation) must not mislead it. Buckets
group measurements by the binary value of the meta field, whatever the collation; control.min/max
compare values under the collation but field names by bytes. The expected answers are MongoDB's
(its jstests timeseries_collation.js and timeseries_nondefault_collation.js) and the languages'
own orders (ICU's), written out here, not read back from the server."""

import datetime

from bson import json_util

from conftest import command_error

T0 = datetime.datetime(2026, 1, 1)

NUMERIC = {"locale": "en_US", "numericOrdering": True, "strength": 1}
INSENSITIVE = {"locale": "en_US", "strength": 1}  # ignores case and diacritics
CASE_SENSITIVE = {"locale": "en_US", "strength": 1, "caseLevel": True}  # ignores diacritics
DIACRITIC_SENSITIVE = {"locale": "en_US", "strength": 2}  # ignores case
CI = {"locale": "en", "strength": 2}


def at(seconds):
    return T0 + datetime.timedelta(seconds=seconds)


def create_ts(db, collation=None, name="ts"):
    cmd = {"create": name, "timeseries": {"timeField": "time", "metaField": "meta"}}
    if collation is not None:
        cmd["collation"] = collation
    db.command(cmd)
    return db[name]


def insert_each(coll, docs):
    """One insert per measurement (a bucket then sees them one write at a time)."""
    for d in docs:
        coll.insert_one(dict(d))


def buckets(db, name="ts"):
    return list(db["system.buckets." + name].find().sort("control.min._id", 1))


def listed_options(db, name):
    r = db.command({"listCollections": 1, "filter": {"name": name}})
    (entry,) = r["cursor"]["firstBatch"]
    return entry["options"]


def explain_text(db, filt, collation=None):
    cmd = {"find": "ts", "filter": filt}
    if collation is not None:
        cmd["collation"] = collation
    return json_util.dumps(db.command("explain", cmd))


# -- create and list ------------------------------------------------------------------------
def test_create_lists_the_collation_on_view_buckets_and_default_index(db):
    collation = {"locale": "en", "strength": 1, "numericOrdering": True}
    create_ts(db, collation)
    expected = {"locale": "en", "caseLevel": False, "caseFirst": "off", "strength": 1,
                "numericOrdering": True, "alternate": "non-ignorable", "maxVariable": "punct",
                "normalization": False, "backwards": False}
    for name in ("ts", "system.buckets.ts"):
        listed = dict(listed_options(db, name)["collation"])
        assert "version" in listed, name
        del listed["version"]
        assert listed == expected, name
    # system.views keeps the view's definition with the collation, as MongoDB keeps it.
    view_def = db["system.views"].find_one({"_id": db.name + ".ts"})
    assert view_def["viewOn"] == "system.buckets.ts"
    assert view_def["collation"]["numericOrdering"] is True
    # The default {meta: 1, time: 1} index is built under the collection's collation.
    specs = {i["name"]: i for i in db.ts.list_indexes()}
    assert specs["meta_1_time_1"]["collation"]["locale"] == "en"
    # create is idempotent with the same options; another collation is another collection.
    again = {"create": "ts", "timeseries": {"timeField": "time", "metaField": "meta"},
             "collation": collation}
    assert db.command(again)["ok"] == 1
    other = dict(again, collation={"locale": "fr"})
    code, name, _ = command_error(db, other)
    assert (code, name) == (48, "NamespaceExists")


# -- bucketing and control.min/max ----------------------------------------------------------
MIXED_CASE_DOCS = [
    {"_id": 0, "time": at(0), "meta": {"a": ["b"], "c": "D"}, "x": "10", "y": {"z": ["2"]}},
    {"_id": 1, "time": at(1), "meta": {"a": ["B"], "c": "d"}, "r": "s", "x": "5",
     "y": {"z": ["5"]}},
    {"_id": 2, "time": at(2), "meta": {"a": ["B"], "c": "D"}},
    {"_id": 3, "time": at(3), "meta": {"a": ["B"], "c": "d"}, "r": "S", "X": "10",
     "Y": {"z": ["2"]}},
]


def test_buckets_group_by_binary_meta_and_control_compares_values_by_collation(db):
    coll = create_ts(db, {"locale": "en", "strength": 1, "numericOrdering": True})
    coll.insert_many([dict(d) for d in MIXED_CASE_DOCS[:2]])
    coll.insert_one(dict(MIXED_CASE_DOCS[2]))
    coll.insert_one(dict(MIXED_CASE_DOCS[3]))
    # The metas are all equal under the collation: bucketing by it would hand back one meta for
    # all of them. Each measurement keeps its own.
    assert list(coll.find().sort("_id", 1)) == MIXED_CASE_DOCS
    got = buckets(db)
    assert len(got) == 3  # documents 1 and 3 share the only binary-equal meta
    first, shared, alone = got
    for side in ("min", "max"):
        assert first["control"][side]["x"] == "10"
        assert first["control"][side]["y"] == {"z": ["2"]}
        # "s" and "S" are equal at strength 1: the first value seen stays.
        assert shared["control"][side]["r"] == "s"
        assert shared["control"][side]["x"] == "5"
        # x and X are different fields: field names are compared by bytes.
        assert shared["control"][side]["X"] == "10"
        assert shared["control"][side]["y"] == {"z": ["5"]}
        assert shared["control"][side]["Y"] == {"z": ["2"]}
        assert "x" not in alone["control"][side] and "y" not in alone["control"][side]


# -- reads under another collation than the collection's ------------------------------------
def test_find_on_meta_compares_under_the_read_collation(db):
    coll = create_ts(db, NUMERIC)
    insert_each(coll, [{"time": at(i), "meta": m, "value": 42}
                       for i, m in enumerate(["1", "10", "5"])])
    assert sorted(d["meta"] for d in coll.find({"meta": {"$gt": "4"}})) == ["10", "5"]
    # Without numeric ordering "10" < "4".
    got = [d["meta"] for d in coll.find({"meta": {"$gt": "4"}}, collation=INSENSITIVE)]
    assert got == ["5"]


def test_find_on_measurement_does_not_trust_control_of_another_collation(db):
    coll = create_ts(db, NUMERIC)
    insert_each(coll, [{"time": at(i), "meta": 42, "value": v}
                       for i, v in enumerate(["1", "10", "5"])])
    (bucket,) = buckets(db)
    # Under numeric ordering the bucket's max is "10" (by bytes it would be "5").
    assert bucket["control"]["min"]["value"] == "1"
    assert bucket["control"]["max"]["value"] == "10"
    assert sorted(d["value"] for d in coll.find({"value": {"$gt": "4"}})) == ["10", "5"]
    # Pruning with max "10" < "4" (lexicographic) would drop the bucket and miss "5".
    got = [d["value"] for d in coll.find({"value": {"$gt": "4"}}, collation=INSENSITIVE)]
    assert got == ["5"]


def test_only_the_query_has_a_collation(db):
    coll = create_ts(db)
    insert_each(coll, [{"time": at(i), "meta": 42, "value": v}
                       for i, v in enumerate(["C", "b", "c"])])
    (bucket,) = buckets(db)
    assert (bucket["control"]["min"]["value"], bucket["control"]["max"]["value"]) == ("C", "c")
    filt = {"value": {"$lt": "c"}}
    assert sorted(d["value"] for d in coll.find(filt)) == ["C", "b"]
    # Insensitively "C" == "c": only "b" is less. A read that pruned with the binary min/max
    # ("C" .. "c") under this collation would think the bucket starts at "c" and skip it.
    assert [d["value"] for d in coll.find(filt, collation=INSENSITIVE)] == ["b"]
    got = list(coll.aggregate([{"$match": filt}], collation=INSENSITIVE))
    assert [d["value"] for d in got] == ["b"]
    assert coll.count_documents(filt, collation=INSENSITIVE) == 1


def test_bucket_stage_groups_meta_under_the_read_collation(db):
    coll = create_ts(db, NUMERIC)
    insert_each(coll, [{"time": at(i), "meta": m, "val": 1} for i, m in enumerate(["1", "5"])])
    stage = {"$bucket": {"groupBy": "$meta", "boundaries": ["1", "10", "50"]}}
    assert list(coll.aggregate([stage])) == [{"_id": "1", "count": 2}]
    # Lexicographically "5" falls in ["10", "50").
    assert list(coll.aggregate([stage], collation=INSENSITIVE)) == [
        {"_id": "1", "count": 1}, {"_id": "10", "count": 1}]


def test_sort_by_count_groups_measurements_under_the_read_collation(db):
    coll = create_ts(db, INSENSITIVE)
    docs = [("a", "A"), ("a", "a"), ("a", "á"), ("b", "A"), ("b", "a"), ("b", "ä")]
    insert_each(coll, [{"time": at(i), "meta": m, "name": n} for i, (m, n) in enumerate(docs)])
    stage = [{"$sortByCount": "$name"}]
    assert len(list(coll.aggregate(stage))) == 1  # all six equal
    assert len(list(coll.aggregate(stage, collation=CASE_SENSITIVE))) == 2  # A | a á ä
    assert len(list(coll.aggregate(stage, collation=DIACRITIC_SENSITIVE))) == 3  # Aa | á | ä


def test_group_max_does_not_take_control_max_of_another_collation(db):
    coll = create_ts(db, NUMERIC)
    insert_each(coll, [{"time": at(0), "meta": 42, "val": "10"},
                       {"time": at(1), "meta": 42, "val": "5"}])
    (bucket,) = buckets(db)
    assert bucket["control"]["max"]["val"] == "10"
    group = [{"$group": {"_id": "$meta", "v": {"$max": "$val"}}}]
    assert [d["v"] for d in coll.aggregate(group)] == ["10"]
    # Lexicographically "5" is the max: control.max ("10") cannot answer this $group.
    assert [d["v"] for d in coll.aggregate(group, collation=INSENSITIVE)] == ["5"]


# -- indexes with a collation ---------------------------------------------------------------
def test_index_is_used_only_by_reads_under_its_collation(db):
    coll = create_ts(db, DIACRITIC_SENSITIVE)
    coll.create_index([("meta", 1)], name="meta_ci", collation=INSENSITIVE)
    coll.create_index([("time", -1)])
    specs = {i["name"]: i for i in coll.list_indexes()}
    assert dict(specs["meta_ci"]["key"]) == {"meta": 1}
    assert specs["meta_ci"]["collation"]["locale"] == "en_US"
    assert specs["meta_ci"]["collation"]["strength"] == 1
    # Indexes created without a collation take the collection's.
    for name in ("meta_1_time_1", "time_-1"):
        assert specs[name]["collation"]["locale"] == "en_US", name
        assert specs[name]["collation"]["strength"] == 2, name
    # meta_ci is now the only index on meta.
    coll.drop_index("meta_1_time_1")
    insert_each(coll, [{"time": at(i), "meta": m}
                       for i, m in enumerate([42, "str", "Str", "stř"])])

    def metas(filt, collation=None):
        return sorted(str(d["meta"]) for d in coll.find(filt, collation=collation))

    assert metas({"meta": "STR"}) == ["Str", "str"]  # strength 2: case ignored, not ř
    assert metas({"meta": "STR"}, INSENSITIVE) == ["Str", "str", "stř"]
    assert metas({"meta": "str"}, CASE_SENSITIVE) == ["str", "stř"]
    assert metas({"meta": 42}) == ["42"]
    # String bounds of a strength-1 index are wrong for any other collation.
    assert '"meta_ci"' not in explain_text(db, {"meta": "str"})
    assert '"meta_ci"' not in explain_text(db, {"meta": "str"}, CASE_SENSITIVE)
    assert '"meta_ci"' in explain_text(db, {"meta": "str"}, INSENSITIVE)
    # A number compares the same under every collation: any collation may use the index.
    assert '"meta_ci"' in explain_text(db, {"meta": 42})


# -- writes, count and distinct under the collection's collation ----------------------------
def test_writes_count_and_distinct_use_the_collection_collation(db):
    coll = create_ts(db, CI)
    insert_each(coll, [{"time": at(i), "meta": m, "v": 0} for i, m in enumerate("aAb")])
    assert coll.count_documents({"meta": "A"}) == 2
    assert coll.count_documents({"meta": "A"}, collation={"locale": "simple"}) == 1
    # One value per class of collation-equal values (which of "a"/"A" is unspecified).
    values = coll.distinct("meta")
    assert len(values) == 2
    assert sorted(v.lower() for v in values) == ["a", "b"]
    assert sorted(coll.distinct("meta", collation={"locale": "simple"})) == ["A", "a", "b"]
    r = coll.update_many({"meta": "A"}, {"$set": {"v": 1}})
    assert (r.matched_count, r.modified_count) == (2, 2)
    assert sorted(d["meta"] for d in coll.find({"v": 1})) == ["A", "a"]
    assert [d["meta"] for d in coll.find({"v": 0})] == ["b"]
    r = coll.delete_many({"meta": "A"})
    assert r.deleted_count == 2
    assert [d["meta"] for d in coll.find()] == ["b"]


def test_numeric_measurement_filter_under_a_collation(db):
    coll = create_ts(db, {"locale": "fr"})
    # 100 measurements over five hours: several buckets.
    coll.insert_many([{"time": at(i * 180), "meta": "s", "v": i} for i in range(1, 101)])
    assert len(buckets(db)) >= 5
    assert coll.count_documents({"v": {"$gte": 50}}) == 51
    assert coll.count_documents({"v": {"$gte": 50}}, collation={"locale": "en"}) == 51
    assert sorted(d["v"] for d in coll.find({"v": {"$lt": 4}})) == [1, 2, 3]


# -- the languages' orders ------------------------------------------------------------------
def names_in_order(coll, collation=None, key="name"):
    cursor = coll.find().sort([(key, 1)])
    if collation is not None:
        cursor = cursor.collation(collation)
    return [d[key] for d in cursor]


def test_french_german_japanese_and_numeric_orders(db):
    coll = create_ts(db)
    names = ["côte", "coté", "Cote", "cotes", "code"]
    insert_each(coll, [{"time": at(i), "meta": "fr", "name": n} for i, n in enumerate(names)])
    got = [d["name"] for d in coll.find({"name": "cote"}, collation={"locale": "fr",
                                                                     "strength": 1})]
    assert sorted(got) == sorted(["côte", "coté", "Cote"])

    de = create_ts(db, name="de")
    insert_each(de, [{"time": at(i), "meta": "de", "name": n}
                     for i, n in enumerate(["Müller", "Muller", "Mueller"])])
    # The phonebook reads "ü" as "ue": Müller sorts with Mueller, both before Muller.
    assert names_in_order(de, {"locale": "de@collation=phonebook"}) == [
        "Mueller", "Müller", "Muller"]

    ja = create_ts(db, {"locale": "ja"}, name="ja")
    assert listed_options(db, "ja")["collation"]["locale"] == "ja"
    insert_each(ja, [{"time": at(i), "meta": "ja", "name": n}
                     for i, n in enumerate(["b", "あ", "a"])])
    assert names_in_order(ja) == ["a", "b", "あ"]  # the collection's collation: Latin first

    num = create_ts(db, name="num")
    insert_each(num, [{"time": at(i), "meta": "n", "v": v}
                      for i, v in enumerate(["10", "9", "100"])])
    assert names_in_order(num, key="v") == ["10", "100", "9"]  # bytes
    numeric = {"locale": "en", "numericOrdering": True}
    assert names_in_order(num, numeric, key="v") == ["9", "10", "100"]


def test_explain_of_a_find_with_a_collation(db):
    coll = create_ts(db)
    coll.insert_one({"time": at(0), "meta": "A", "v": 1})
    r = db.command("explain", {"find": "ts", "filter": {"meta": "a"},
                               "collation": {"locale": "en", "strength": 2}})
    assert r["ok"] == 1


# -- restart --------------------------------------------------------------------------------
def test_collation_survives_a_restart(fresh_server):
    s = fresh_server.new()
    c = s.client()
    db = c.tscoll
    coll = create_ts(db, CI)
    insert_each(coll, [{"time": at(0), "meta": "a", "v": "x"},
                       {"time": at(1), "meta": "A", "v": "x"}])
    assert len(buckets(db)) == 2  # binary metas: two series
    c.close()
    assert s.shutdown_command() == 0
    s.start()
    c = s.client()
    try:
        db = c.tscoll
        coll = db.ts
        assert listed_options(db, "ts")["collation"]["strength"] == 2
        assert coll.count_documents({"meta": "a"}) == 2
        insert_each(coll, [{"time": at(10), "meta": "n", "v": "Z"},
                           {"time": at(11), "meta": "n", "v": "y"}])
        (bucket,) = [b for b in buckets(db) if b["meta"] == "n"]
        # Case ignored: y < z, so "Z" stays the max (by bytes "Z" < "y").
        assert bucket["control"]["max"]["v"] == "Z"
        assert bucket["control"]["min"]["v"] == "y"
    finally:
        c.close()


def test_measurement_index_under_another_collation_answers_right(db):
    # Its keys are of control.min/max, ordered under the collection's (simple) collation: it
    # bounds no string comparison, yet every read through it answers as a scan does.
    coll = create_ts(db)
    coll.insert_many([{"time": at(i * 600), "meta": i % 2, "v": v}
                      for i, v in enumerate(["a", "B", "c", "D", 5, 7])])
    coll.create_index([("v", 1)], name="v_ci", collation=CI)
    for filt, collation, want in (
            ({"v": "b"}, CI, ["B"]),
            ({"v": {"$gt": "b"}}, CI, ["c", "D"]),
            ({"v": {"$gt": "a"}}, None, ["c"]),
            ({"v": {"$gte": 6}}, CI, [7])):
        for hint in (None, "v_ci"):
            cur = coll.find(filt, collation=collation)
            if hint:
                cur = cur.hint(hint)
            assert sorted(d["v"] for d in cur) == sorted(want), (filt, collation, hint)


def test_rewrites_that_compare_no_strings_stay_under_a_collation(db):
    # The time sort is still bounded over buckets, while groups by the meta merge the metas the
    # collation deems equal (a last-point or control answer would keep "a" and "A" apart).
    coll = create_ts(db, CI)
    rows = [{"time": at(600 * i), "meta": m, "v": i} for i, m in enumerate("aAbaAb")]
    insert_each(coll, rows)
    newest = list(coll.find({}, {"_id": 0, "v": 1}).sort("time", -1).limit(2))
    assert [d["v"] for d in newest] == [5, 4]
    explain = json_util.dumps(db.command("explain", {"find": "ts", "sort": {"time": -1},
                                                     "limit": 2}))
    assert "$_internalBoundedSort" in explain
    latest = list(coll.aggregate([{"$sort": {"meta": 1, "time": -1}},
                                  {"$group": {"_id": "$meta", "v": {"$first": "$v"}}},
                                  {"$sort": {"v": 1}}]))
    assert [d["v"] for d in latest] == [4, 5]  # "a"/"A" newest is 4, "b"'s is 5
    assert [d["_id"].lower() for d in latest] == ["a", "b"]
    counts = list(coll.aggregate([{"$group": {"_id": "$meta", "n": {"$sum": 1}}},
                                  {"$sort": {"n": 1}}]))
    assert [d["n"] for d in counts] == [2, 4]
    assert coll.count_documents({}) == 6
    # Under the simple collation the metas are three again.
    simple = list(coll.aggregate([{"$group": {"_id": "$meta"}}], collation={"locale": "simple"}))
    assert sorted(d["_id"] for d in simple) == ["A", "a", "b"]


def test_bad_collations_on_create_fail_as_on_a_collection(db):
    # MongoDB's codes for a collation that is no object, a bad field, no locale, an unknown
    # locale; the same as a regular collection's.
    for collation, code in (("fr", 14), ({"locale": "fr", "strength": 9}, 9),
                            ({"strength": 2}, 4), ({"locale": "xx_nowhere"}, 2)):
        cmd = {"create": "ts", "timeseries": {"timeField": "time"}, "collation": collation}
        assert command_error(db, cmd)[0] == code, collation
        assert command_error(db, {"create": "plain", "collation": collation})[0] == code
    assert "ts" not in db.list_collection_names()

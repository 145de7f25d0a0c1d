"""Time-series collection options: create validation, bucketing parameters,
collMod, listCollections, drop and rename (spec/timeseries.md sections 1 and 2,
MongoDB 7.0 behavior)."""

import datetime

import pytest
from bson.int64 import Int64
from bson.objectid import ObjectId

from conftest import command_error, run_command

MAX_SPAN_RANGE = 31536000  # 365 days, upper bound of custom bucketing values (1.2)
PRESETS = {"seconds": 3600, "minutes": 86400, "hours": 2592000}


def entries(db, **filter_):
    r = db.command({"listCollections": 1, "filter": filter_})
    return {c["name"]: c for c in r["cursor"]["firstBatch"]}


def ts_options(db, name):
    return entries(db, name=name)[name]["options"]["timeseries"]


def create_ts(db, name="ts", **timeseries):
    timeseries.setdefault("timeField", "t")
    return db.command({"create": name, "timeseries": timeseries})


def err(db, cmd):
    code, _, msg = command_error(db, cmd)
    return code, msg


# -- 1.1 accepted options and materialized defaults ---------------------------------
def test_defaults_are_materialized(db):
    assert create_ts(db)["ok"] == 1
    assert ts_options(db, "ts") == {
        "timeField": "t",
        "granularity": "seconds",
        "bucketMaxSpanSeconds": 3600,
    }


@pytest.mark.parametrize("granularity", ["seconds", "minutes", "hours"])
def test_granularity_presets(db, granularity):
    create_ts(db, metaField="m", granularity=granularity)
    assert list(ts_options(db, "ts")) == [
        "timeField", "metaField", "granularity", "bucketMaxSpanSeconds"
    ]
    assert ts_options(db, "ts") == {
        "timeField": "t",
        "metaField": "m",
        "granularity": granularity,
        "bucketMaxSpanSeconds": PRESETS[granularity],
    }


def test_granularity_with_matching_max_span_is_accepted(db):
    create_ts(db, granularity="minutes", bucketMaxSpanSeconds=86400)
    assert ts_options(db, "ts") == {
        "timeField": "t",
        "granularity": "minutes",
        "bucketMaxSpanSeconds": 86400,
    }


def test_custom_bucketing_stores_no_granularity(db):
    create_ts(db, metaField="m", bucketMaxSpanSeconds=500, bucketRoundingSeconds=500)
    assert list(ts_options(db, "ts")) == [
        "timeField", "metaField", "bucketRoundingSeconds", "bucketMaxSpanSeconds"
    ]
    assert ts_options(db, "ts") == {
        "timeField": "t",
        "metaField": "m",
        "bucketRoundingSeconds": 500,
        "bucketMaxSpanSeconds": 500,
    }


@pytest.mark.parametrize("value", [1, MAX_SPAN_RANGE])
def test_custom_bucketing_range_bounds_accepted(db, value):
    create_ts(db, bucketMaxSpanSeconds=value, bucketRoundingSeconds=value)
    assert ts_options(db, "ts")["bucketMaxSpanSeconds"] == value


def test_create_collection_helper_and_array_meta_field_values(db):
    # pymongo's create_collection sends the same create command.
    coll = db.create_collection("ts", timeseries={"timeField": "t", "metaField": "m"})
    # Arrays are accepted as meta values (1.1).
    coll.insert_one({"t": datetime.datetime(2024, 1, 1), "m": [1, 2]})
    assert coll.find_one({}, {"_id": 0}) == {"t": datetime.datetime(2024, 1, 1), "m": [1, 2]}


def test_tolerated_top_level_options(db):
    r = db.command(
        {
            "create": "ts",
            "timeseries": {"timeField": "t"},
            "capped": False,
            "storageEngine": {},
            "indexOptionDefaults": {},
            "writeConcern": {"w": 1},
            "comment": "hello",
        }
    )
    assert r["ok"] == 1
    assert entries(db, name="ts")["ts"]["type"] == "timeseries"


# -- 1.1 IDL errors ---------------------------------------------------------------
def test_time_field_is_required(db):
    code, msg = err(db, {"create": "ts", "timeseries": {"metaField": "m"}})
    assert code == 40414  # IDLFailedToParse: missing required field
    assert "timeField" in msg


def test_time_field_must_be_string(db):
    code, msg = err(db, {"create": "ts", "timeseries": {"timeField": 1}})
    assert code == 14  # TypeMismatch
    assert "timeField" in msg


def test_unknown_timeseries_sub_field(db):
    code, msg = err(db, {"create": "ts", "timeseries": {"timeField": "t", "bogus": 1}})
    assert code == 40415  # IDLUnknownField
    assert "bogus" in msg


def test_bad_granularity_is_bad_value(db):
    code, msg = err(db, {"create": "ts", "timeseries": {"timeField": "t", "granularity": "days"}})
    assert code == 2
    assert "days" in msg


def test_timeseries_must_be_object(db):
    code, _ = err(db, {"create": "ts", "timeseries": "t"})
    assert code == 14


# -- 1.1 field name rules (InvalidOptions 72) ---------------------------------------
def test_time_field_with_dot(db):
    code, msg = err(db, {"create": "ts", "timeseries": {"timeField": "a.b"}})
    assert code == 72
    assert msg == f"{db.name}.ts: 'timeField' must be a top-level field and not contain a '.'"


def test_meta_field_id(db):
    code, msg = err(db, {"create": "ts", "timeseries": {"timeField": "t", "metaField": "_id"}})
    assert code == 72
    assert "'metaField' cannot be \"_id\"" in msg


def test_meta_field_equal_to_time_field(db):
    code, msg = err(db, {"create": "ts", "timeseries": {"timeField": "t", "metaField": "t"}})
    assert code == 72
    assert "'metaField' cannot be the same as 'timeField'" in msg


def test_meta_field_with_dot(db):
    code, msg = err(db, {"create": "ts", "timeseries": {"timeField": "t", "metaField": "m.x"}})
    assert code == 72
    assert msg == f"{db.name}.ts: 'metaField' must be a top-level field and not contain a '.'"


@pytest.mark.parametrize("timeseries,field", [
    ({"timeField": "$t"}, "timeField"),
    ({"timeField": "t\x00x"}, "timeField"),
    ({"timeField": "t", "metaField": "$m"}, "metaField"),
    ({"timeField": "t", "metaField": "m\x00"}, "metaField"),
])
def test_field_names_with_dollar_or_null_are_bad_values(db, timeseries, field):
    # MongoDB 8.x answers BadValue for these, through create and through $out's timeseries.
    code, msg = err(db, {"create": "ts", "timeseries": timeseries})
    assert code == 2 and field in msg, msg
    db.src.insert_one({"t": datetime.datetime(2024, 1, 1), "m": 1})
    code, msg = err(db, {"aggregate": "src", "pipeline": [
        {"$out": {"db": db.name, "coll": "out", "timeseries": timeseries}}], "cursor": {}})
    assert code == 2 and field in msg, msg
    assert "ts" not in db.list_collection_names() and "out" not in db.list_collection_names()


# -- 1.1 top-level options not allowed with timeseries ------------------------------
@pytest.mark.parametrize(
    "option,value",
    [
        ("capped", True),
        ("size", 4096),
        ("max", 10),
        ("validator", {"a": 1}),
        ("validationLevel", "off"),
        ("validationAction", "warn"),
        ("clusteredIndex", True),
        ("changeStreamPreAndPostImages", {"enabled": False}),
    ],
)
def test_option_not_allowed_with_timeseries(db, option, value):
    cmd = {"create": "ts", "timeseries": {"timeField": "t"}, option: value}
    if option in ("size", "max"):
        cmd["capped"] = False
    code, msg = err(db, cmd)
    assert code == 72, msg
    assert f"'timeseries' is not allowed with '{option}'" in msg
    assert "ts" not in db.list_collection_names()


def test_buckets_namespace_create_tolerates_validator_and_clustered_index(db):
    # The restore path: a buckets collection is created directly with its options.
    r = run_command(
        db,
        {
            "create": "system.buckets.r",
            "timeseries": {"timeField": "t"},
            "clusteredIndex": True,
            "validator": {"$jsonSchema": {"bsonType": "object"}},
        },
    )
    assert r["ok"] == 1, r
    entry = entries(db, name="system.buckets.r")["system.buckets.r"]
    assert entry["type"] == "collection"
    assert entry["options"]["clusteredIndex"] is True
    assert entry["options"]["timeseries"]["timeField"] == "t"


def test_buckets_namespace_without_timeseries_options_is_illegal(db):
    code, msg = err(db, {"create": "system.buckets.r"})
    assert code == 20, msg
    code, _ = err(db, {"create": "system.buckets.r", "clusteredIndex": True})
    assert code == 20
    assert "system.buckets.r" not in db.list_collection_names()


def test_drop_of_a_collection_whose_buckets_alone_exist(db):
    # A restore that created only system.buckets.r: dropping r drops them, as MongoDB does.
    assert run_command(db, {"create": "system.buckets.r", "timeseries": {"timeField": "t"},
                            "clusteredIndex": True})["ok"] == 1
    db["system.buckets.r"].insert_one({"_id": ObjectId(), "control": {
        "version": 1, "min": {"t": datetime.datetime(2024, 1, 1)},
        "max": {"t": datetime.datetime(2024, 1, 1)}}, "data": {"t": {"0": datetime.datetime(2024, 1, 1)}}})
    assert "system.buckets.r" in db.list_collection_names()
    assert db.command({"drop": "r"})["ok"] == 1
    assert "system.buckets.r" not in db.list_collection_names()
    # Nothing by either name: still ok.
    assert db.command({"drop": "r"})["ok"] == 1


def test_view_on_with_timeseries_is_rejected(db):
    db.create_collection("src")
    code, msg = err(
        db, {"create": "ts", "timeseries": {"timeField": "t"}, "viewOn": "src", "pipeline": []}
    )
    assert code == 72, msg


def test_pipeline_without_view_on(db):
    code, _ = err(db, {"create": "v", "pipeline": []})
    assert code == 72


def test_encrypted_fields_with_timeseries(db):
    code, _ = err(
        db,
        {"create": "ts", "timeseries": {"timeField": "t"}, "encryptedFields": {"fields": []}},
    )
    assert code == 6346401


def test_view_on_buckets_namespace_is_invalid(db):
    create_ts(db)
    code, _ = err(db, {"create": "v", "viewOn": "system.buckets.ts", "pipeline": []})
    assert code == 73


# -- 1.1 expireAfterSeconds --------------------------------------------------------
def test_expire_after_seconds_is_listed_as_long(db):
    db.command({"create": "ts", "timeseries": {"timeField": "t"}, "expireAfterSeconds": 3600})
    opts = entries(db, name="ts")["ts"]["options"]
    assert opts["expireAfterSeconds"] == 3600
    assert isinstance(opts["expireAfterSeconds"], Int64)


def test_expire_after_seconds_zero_is_valid(db):
    db.command({"create": "ts", "timeseries": {"timeField": "t"}, "expireAfterSeconds": 0})
    assert entries(db, name="ts")["ts"]["options"]["expireAfterSeconds"] == 0


def test_expire_after_seconds_requires_timeseries_or_clustered(db):
    code, msg = err(db, {"create": "c", "expireAfterSeconds": 10})
    assert code == 72
    assert msg == (
        "'expireAfterSeconds' is only supported on time-series collections or when the "
        "'clusteredIndex' option is specified"
    )


def test_expire_after_seconds_negative(db):
    code, msg = err(
        db, {"create": "ts", "timeseries": {"timeField": "t"}, "expireAfterSeconds": -1}
    )
    assert code == 72
    assert msg == "TTL index 'expireAfterSeconds' option cannot be less than 0"


@pytest.mark.parametrize("value", [Int64(2**63 // 1000 + 1), Int64(10**13)])
def test_expire_after_seconds_out_of_range(db, value):
    # 10**13 s = 10**16 ms is later than "now since epoch" in milliseconds.
    code, msg = err(
        db, {"create": "ts", "timeseries": {"timeField": "t"}, "expireAfterSeconds": value}
    )
    assert code == 72
    assert msg == (
        "TTL index 'expireAfterSeconds' option must be within an acceptable range, "
        "try a lower number"
    )


# -- 1.2 bucketing parameter validation ---------------------------------------------
def test_granularity_with_other_max_span(db):
    code, msg = err(
        db,
        {"create": "ts", "timeseries": {"timeField": "t", "granularity": "seconds",
                                        "bucketMaxSpanSeconds": 100}},
    )
    assert code == 72
    assert msg == (
        "Time-series 'bucketMaxSpanSeconds' cannot be set to a value other than the default "
        "of 3600 for the provided granularity"
    )


@pytest.mark.parametrize("rounding", [100, 86400], ids=["other", "the-preset"])
def test_granularity_with_rounding(db, rounding):
    # Refused even at the granularity's own rounding (MongoDB 8.0; 7.0 let that one by).
    code, msg = err(
        db,
        {"create": "ts", "timeseries": {"timeField": "t", "granularity": "hours",
                                        "bucketRoundingSeconds": rounding}},
    )
    assert code == 72
    assert msg == ("Time-series 'bucketRoundingSeconds' cannot be set alongside the granularity "
                   "parameter")
    assert "ts" not in db.list_collection_names()


@pytest.mark.parametrize(
    "custom",
    [
        {"bucketMaxSpanSeconds": 100, "bucketRoundingSeconds": 50},
        {"bucketMaxSpanSeconds": 100},
        {"bucketRoundingSeconds": 100},
    ],
    ids=["unequal", "only-max-span", "only-rounding"],
)
def test_custom_values_must_be_equal_and_together(db, custom):
    code, msg = err(db, {"create": "ts", "timeseries": dict(timeField="t", **custom)})
    assert code == 72, msg
    assert "bucketRoundingSeconds" in msg and "bucketMaxSpanSeconds" in msg


@pytest.mark.parametrize("value", [0, -1, MAX_SPAN_RANGE + 1])
def test_custom_values_out_of_range(db, value):
    code, msg = err(
        db,
        {"create": "ts", "timeseries": {"timeField": "t", "bucketMaxSpanSeconds": value,
                                        "bucketRoundingSeconds": value}},
    )
    # 7.0: IDL validator error 51024; 7.1+: BadValue.
    assert code in (51024, 2), (code, msg)
    assert "ts" not in db.list_collection_names()


# -- 1.1 idempotent create ----------------------------------------------------------
def test_recreate_with_same_options_is_ok(db):
    create_ts(db, metaField="m")
    assert create_ts(db, metaField="m")["ok"] == 1
    # Absent granularity is equivalent to "seconds" (and its preset span).
    assert create_ts(db, metaField="m", granularity="seconds")["ok"] == 1
    assert (
        create_ts(db, metaField="m", granularity="seconds", bucketMaxSpanSeconds=3600)["ok"] == 1
    )


@pytest.mark.parametrize("granularity", ["seconds", "minutes", "hours"])
def test_listed_options_create_the_collection_again(db, granularity):
    """What a dump and restore does: the options listCollections gives (granularity with its
    bucketMaxSpanSeconds, as MongoDB lists them) create the same collection elsewhere. A
    bucketMaxSpanSeconds equal to the granularity's is accepted beside it, as in MongoDB; only a
    different one is InvalidOptions (72)."""
    create_ts(db, metaField="m", granularity=granularity)
    listed = entries(db, name="ts")["ts"]["options"]
    assert listed["timeseries"]["bucketMaxSpanSeconds"] == PRESETS[granularity]
    assert db.command(dict({"create": "copy"}, **listed))["ok"] == 1
    assert entries(db, name="copy")["copy"]["options"] == listed
    other = dict(listed["timeseries"], bucketMaxSpanSeconds=PRESETS[granularity] + 1)
    code, _ = err(db, {"create": "bad", "timeseries": other})
    assert code == 72


@pytest.mark.parametrize(
    "other",
    [
        {"metaField": "n"},
        {},
        {"granularity": "minutes", "metaField": "m"},
        {"metaField": "m", "bucketMaxSpanSeconds": 60, "bucketRoundingSeconds": 60},
    ],
    ids=["other-meta", "no-meta", "other-granularity", "custom-spans"],
)
def test_recreate_with_different_options_is_namespace_exists(db, other):
    create_ts(db, metaField="m")
    code, _ = err(db, {"create": "ts", "timeseries": dict(timeField="t", **other)})
    assert code == 48
    code, _ = err(db, {"create": "ts", "timeseries": {"timeField": "u", "metaField": "m"}})
    assert code == 48


def test_create_ts_over_plain_collection_is_namespace_exists(db):
    db.create_collection("plain")
    code, name, _ = command_error(db, {"create": "plain", "timeseries": {"timeField": "t"}})
    assert (code, name) == (48, "NamespaceExists")
    create_ts(db)
    code, _, _ = command_error(db, {"create": "ts"})
    assert code == 48


# -- 1.3 collMod -----------------------------------------------------------------------
def collmod(db, **fields):
    return run_command(db, dict({"collMod": "ts"}, **fields))


def test_collmod_expire_after_seconds_set_change_off(db):
    create_ts(db)
    assert collmod(db, expireAfterSeconds=100)["ok"] == 1
    opts = entries(db, name="ts")["ts"]["options"]
    assert opts["expireAfterSeconds"] == 100
    assert isinstance(opts["expireAfterSeconds"], Int64)
    assert collmod(db, expireAfterSeconds=200)["ok"] == 1
    assert entries(db, name="ts")["ts"]["options"]["expireAfterSeconds"] == 200
    assert collmod(db, expireAfterSeconds="off")["ok"] == 1
    assert "expireAfterSeconds" not in entries(db, name="ts")["ts"]["options"]


def test_collmod_expire_after_seconds_negative(db):
    create_ts(db)
    assert collmod(db, expireAfterSeconds=-5)["ok"] == 0
    assert "expireAfterSeconds" not in entries(db, name="ts")["ts"]["options"]


@pytest.mark.parametrize(
    "before,after", [("seconds", "minutes"), ("seconds", "hours"), ("minutes", "hours")]
)
def test_collmod_granularity_allowed_transitions(db, before, after):
    create_ts(db, granularity=before)
    assert collmod(db, timeseries={"granularity": after})["ok"] == 1
    assert ts_options(db, "ts") == {
        "timeField": "t",
        "granularity": after,
        "bucketMaxSpanSeconds": PRESETS[after],
    }


@pytest.mark.parametrize(
    "before,after", [("minutes", "seconds"), ("hours", "seconds"), ("hours", "minutes")]
)
def test_collmod_granularity_invalid_transitions(db, before, after):
    create_ts(db, granularity=before)
    r = collmod(db, timeseries={"granularity": after})
    assert r["code"] == 72
    assert r["errmsg"] == (
        "Invalid transition for timeseries.granularity. Can only transition from 'seconds' "
        "to 'minutes' or 'minutes' to 'hours'."
    )
    assert ts_options(db, "ts")["granularity"] == before


def test_collmod_same_granularity_and_empty_timeseries_are_noops(db):
    create_ts(db, granularity="minutes")
    assert collmod(db, timeseries={"granularity": "minutes"})["ok"] == 1
    assert collmod(db, timeseries={})["ok"] == 1
    assert ts_options(db, "ts") == {
        "timeField": "t",
        "granularity": "minutes",
        "bucketMaxSpanSeconds": 86400,
    }


def test_collmod_granularity_with_spans(db):
    create_ts(db)
    # A matching preset span may accompany granularity ...
    assert collmod(db, timeseries={"granularity": "minutes", "bucketMaxSpanSeconds": 86400})[
        "ok"
    ] == 1
    # ... a different one may not, nor bucketRoundingSeconds.
    assert collmod(db, timeseries={"granularity": "hours", "bucketMaxSpanSeconds": 100})[
        "code"
    ] == 72
    assert collmod(db, timeseries={"granularity": "hours", "bucketRoundingSeconds": 100})[
        "code"
    ] == 72
    # ... not even the preset's (MongoDB 8.0).
    r = collmod(db, timeseries={"granularity": "hours", "bucketRoundingSeconds": 86400})
    assert r["code"] == 72 and "alongside the granularity" in r["errmsg"], r
    assert ts_options(db, "ts")["granularity"] == "minutes"


def test_collmod_custom_spans_grow_and_drop_granularity(db):
    create_ts(db)
    assert collmod(
        db, timeseries={"bucketMaxSpanSeconds": 7200, "bucketRoundingSeconds": 7200}
    )["ok"] == 1
    assert ts_options(db, "ts") == {
        "timeField": "t",
        "bucketRoundingSeconds": 7200,
        "bucketMaxSpanSeconds": 7200,
    }
    # Identical values: success without change.
    assert collmod(
        db, timeseries={"bucketMaxSpanSeconds": 7200, "bucketRoundingSeconds": 7200}
    )["ok"] == 1


def test_collmod_custom_spans_cannot_shrink(db):
    create_ts(db, bucketMaxSpanSeconds=5000, bucketRoundingSeconds=5000)
    r = collmod(db, timeseries={"bucketMaxSpanSeconds": 4000, "bucketRoundingSeconds": 4000})
    assert r["code"] == 72
    assert "needs to be equal or greater to transition" in r["errmsg"]
    assert ts_options(db, "ts")["bucketMaxSpanSeconds"] == 5000


@pytest.mark.parametrize(
    "custom",
    [{"bucketMaxSpanSeconds": 9000}, {"bucketMaxSpanSeconds": 9000, "bucketRoundingSeconds": 8000}],
    ids=["alone", "unequal"],
)
def test_collmod_custom_spans_must_be_both_and_equal(db, custom):
    create_ts(db)
    assert collmod(db, timeseries=custom)["code"] == 72


def test_collmod_custom_to_granularity(db):
    create_ts(db, bucketMaxSpanSeconds=1000, bucketRoundingSeconds=1000)
    # minutes' presets (86400 / 3600) are >= the current 1000 / 1000.
    assert collmod(db, timeseries={"granularity": "minutes"})["ok"] == 1
    assert ts_options(db, "ts") == {
        "timeField": "t",
        "granularity": "minutes",
        "bucketMaxSpanSeconds": 86400,
    }


def test_collmod_custom_to_smaller_granularity_is_rejected(db):
    create_ts(db, bucketMaxSpanSeconds=100000, bucketRoundingSeconds=100000)
    # seconds' presets (3600 / 60) are smaller than the current values.
    assert collmod(db, timeseries={"granularity": "seconds"})["code"] == 72
    assert ts_options(db, "ts")["bucketMaxSpanSeconds"] == 100000


@pytest.mark.parametrize(
    "fields",
    [
        {"validator": {"a": {"$exists": True}}},
        {"validationLevel": "off"},
        {"validationAction": "warn"},
        {"viewOn": "other", "pipeline": []},
        {"index": {"keyPattern": {"t": 1}, "expireAfterSeconds": 100}},
        {"index": {"keyPattern": {"t": 1}, "prepareUnique": True}},
        {"index": {"keyPattern": {"t": 1}, "prepareUnique": False}},
    ],
    ids=["validator", "validationLevel", "validationAction", "viewOn", "index-ttl",
         "index-prepareUnique-true", "index-prepareUnique-false"],
)
def test_collmod_rejected_options(db, fields):
    create_ts(db)
    r = collmod(db, **fields)
    assert r["ok"] == 0
    assert r["code"] == 72, r


def test_collmod_mixed_schema_flag_is_accepted(db):
    create_ts(db)
    assert collmod(db, timeseriesBucketsMayHaveMixedSchemaData=True)["ok"] == 1
    assert collmod(db, timeseriesBucketsMayHaveMixedSchemaData=False)["ok"] == 1


def test_collmod_on_buckets_namespace(db):
    create_ts(db)
    r = run_command(db, {"collMod": "system.buckets.ts", "expireAfterSeconds": 10})
    assert r["code"] == 73, r


def test_collmod_changes_bucketing_of_new_buckets(db):
    create_ts(db, metaField="m")
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 1, 10, 30, 15), "m": 1})
    collmod(db, timeseries={"granularity": "hours"})
    # A measurement in a different series opens a bucket rounded to the day.
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 1, 10, 30, 15), "m": 2})
    mins = sorted(
        (b["meta"], b["control"]["min"]["t"]) for b in db["system.buckets.ts"].find()
    )
    assert mins == [
        (1, datetime.datetime(2024, 1, 1, 10, 30)),
        (2, datetime.datetime(2024, 1, 1, 0, 0)),
    ]


# -- 2.1 / 2.2 catalog representation -----------------------------------------------
def test_list_collections_view_and_buckets_entries(db):
    create_ts(db, metaField="m", granularity="minutes")
    all_ = entries(db)
    assert {"ts", "system.buckets.ts"} <= set(all_)
    view = all_["ts"]
    assert view == {
        "name": "ts",
        "type": "timeseries",
        "options": {
            "timeseries": {
                "timeField": "t",
                "metaField": "m",
                "granularity": "minutes",
                "bucketMaxSpanSeconds": 86400,
            }
        },
        "info": {"readOnly": False},
    }
    buckets = all_["system.buckets.ts"]
    assert buckets["type"] == "collection"
    opts = buckets["options"]
    assert opts["clusteredIndex"] is True
    assert opts["timeseries"] == view["options"]["timeseries"]
    assert "uuid" in buckets["info"]
    schema = opts["validator"]["$jsonSchema"]
    assert schema["bsonType"] == "object"
    assert schema["required"] == ["_id", "control", "data"]
    assert schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["_id"] == {"bsonType": "objectId"}
    assert props["data"] == {"bsonType": "object"}
    assert props["meta"] == {}
    control = props["control"]
    assert control["bsonType"] == "object"
    assert control["required"] == ["version", "min", "max"]
    for bound in ("min", "max"):
        assert control["properties"][bound] == {
            "bsonType": "object",
            "required": ["t"],
            "properties": {"t": {"bsonType": "date"}},
        }
    assert control["properties"]["version"] == {"bsonType": "number"}
    assert control["properties"]["closed"] == {"bsonType": "bool"}
    # Schema version 2, as MongoDB 7.1+ writes it for a new collection.
    assert control["properties"]["count"] == {"bsonType": "number", "minimum": 1}
    assert control["additionalProperties"] is False
    assert list(control) == ["bsonType", "required", "properties", "additionalProperties"]


def test_list_collections_shows_system_views(db):
    # The view half of a time-series collection lives in system.views (2.1, 2.2).
    create_ts(db)
    listed = entries(db)
    assert "system.views" in listed
    assert listed["system.views"]["type"] == "collection"


def test_list_collections_filter_by_type(db):
    create_ts(db, "ts1")
    create_ts(db, "ts2", metaField="m")
    db.create_collection("plain")
    r = db.command({"listCollections": 1, "filter": {"type": "timeseries"}})
    got = r["cursor"]["firstBatch"]
    assert sorted(c["name"] for c in got) == ["ts1", "ts2"]
    assert all(c["type"] == "timeseries" for c in got)
    names = db.list_collection_names(filter={"type": "collection"})
    # system.views holds the views' definitions (spec 2.2).
    assert sorted(names) == ["plain", "system.buckets.ts1", "system.buckets.ts2", "system.views"]


def test_list_collections_name_only(db):
    create_ts(db)
    r = db.command({"listCollections": 1, "nameOnly": True, "filter": {"name": "ts"}})
    assert r["cursor"]["firstBatch"] == [{"name": "ts", "type": "timeseries"}]


def test_insert_into_buckets_validator_rejects_malformed_bucket(db):
    create_ts(db)
    # A well-formed ObjectId _id, but no control/data: only the $jsonSchema validator
    # (validationAction error) can reject it.
    r = run_command(
        db, {"insert": "system.buckets.ts", "documents": [{"_id": ObjectId(), "x": 1}]}
    )
    assert r["ok"] == 1
    assert r["n"] == 0
    assert r["writeErrors"][0]["code"] == 121  # DocumentValidationFailure


# -- 2.3 drop / rename ---------------------------------------------------------------
def test_drop_removes_view_and_buckets(db):
    create_ts(db)
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 1)})
    r = db.command({"drop": "ts"})
    assert r["ok"] == 1
    left = set(db.list_collection_names())
    assert "ts" not in left and "system.buckets.ts" not in left
    assert list(db["system.buckets.ts"].find()) == []
    # The name can be reused, also as a plain collection.
    db.ts.insert_one({"_id": 1})
    assert entries(db, name="ts")["ts"]["type"] == "collection"


def test_drop_buckets_directly_leaves_view(db):
    create_ts(db)
    db.ts.insert_one({"t": datetime.datetime(2024, 1, 1)})
    assert db.command({"drop": "system.buckets.ts"})["ok"] == 1
    listed = entries(db)
    assert "system.buckets.ts" not in listed
    assert listed["ts"]["type"] == "timeseries"
    assert list(db.ts.find()) == []


def test_rename_timeseries_collection_not_supported(client, db):
    create_ts(db)
    code, name, _ = command_error(
        client.admin, {"renameCollection": f"{db.name}.ts", "to": f"{db.name}.ts2"}
    )
    assert (code, name) == (166, "CommandNotSupportedOnView")
    assert entries(db, name="ts")["ts"]["type"] == "timeseries"


def test_rename_to_or_from_buckets_namespace(client, db):
    create_ts(db)
    db.create_collection("plain")
    code, _, _ = command_error(
        client.admin,
        {"renameCollection": f"{db.name}.system.buckets.ts", "to": f"{db.name}.other"},
    )
    assert code == 20
    code, _, _ = command_error(
        client.admin,
        {"renameCollection": f"{db.name}.plain", "to": f"{db.name}.system.buckets.plain"},
    )
    assert code == 20
    assert {"plain", "ts", "system.buckets.ts"} <= set(db.list_collection_names())

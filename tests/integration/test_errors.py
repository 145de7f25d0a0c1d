"""Error replies: codes, codeNames and messages as MongoDB 7.0 produces them."""

import pytest
from bson.int64 import Int64

import wire
from conftest import command_error, run_command


def test_error_reply_shape(db):
    r = run_command(db, {"find": "c", "filter": "x"})
    assert r["ok"] == 0
    assert isinstance(r["errmsg"], str) and r["errmsg"]
    assert isinstance(r["code"], int)
    assert isinstance(r["codeName"], str)


# -- IDL type checks: 14 TypeMismatch ---------------------------------------------------
@pytest.mark.parametrize(
    "cmd,field,got,expected",
    [
        ({"find": "c", "filter": "x"}, "find.filter", "string", "object"),
        ({"find": "c", "sort": 5}, "find.sort", "int", "object"),
        ({"find": "c", "projection": [1]}, "find.projection", "array", "object"),
        ({"insert": "c", "documents": [], "ordered": "yes"}, "insert.ordered", "string", "bool"),
    ],
)
def test_wrong_field_type(db, cmd, field, got, expected):
    code, name, msg = command_error(db, cmd)
    assert (code, name) == (14, "TypeMismatch")
    assert msg == f"BSON field '{field}' is the wrong type '{got}', expected type '{expected}'"


@pytest.mark.parametrize(
    "cmd,field,got,expected",
    [
        ({"insert": "c", "documents": "x"}, "insert.documents", "string", "array"),
        ({"delete": "c", "deletes": {}}, "delete.deletes", "object", "array"),
        ({"update": "c", "updates": 1}, "update.updates", "int", "array"),
    ],
)
def test_wrong_write_array_type(server, cmd, field, got, expected):
    # Sent by hand: pymongo would move these arrays into document sequences.
    s = wire.connect(server.port)
    try:
        r = wire.command(s, dict(cmd, **{"$db": "t_err_raw"}))
    finally:
        s.close()
    assert r["ok"] == 0
    assert (r["code"], r["codeName"]) == (14, "TypeMismatch")
    assert r["errmsg"] == (
        f"BSON field '{field}' is the wrong type '{got}', expected type '{expected}'"
    )


def test_wrong_type_in_number_field(db):
    code, name, msg = command_error(db, {"find": "c", "limit": "ten"})
    assert (code, name) == (14, "TypeMismatch")
    assert "find.limit" in msg


# -- IDL strictness: unknown and missing fields ---------------------------------------------
@pytest.mark.parametrize(
    "cmd,field",
    [
        ({"find": "c", "bogusOption": 1}, "find.bogusOption"),
        ({"insert": "c", "documents": [{}], "bogus": True}, "insert.bogus"),
        ({"aggregate": "c", "pipeline": [], "cursor": {}, "nope": 1}, "aggregate.nope"),
        ({"delete": "c", "deletes": [], "zzz": 1}, "delete.zzz"),
    ],
)
def test_unknown_field_in_strict_command(db, cmd, field):
    code, name, msg = command_error(db, cmd)
    assert code == 40415
    assert name == "Location40415"
    assert msg == f"BSON field '{field}' is an unknown field."


def test_missing_required_field(db):
    code, name, msg = command_error(db, {"aggregate": "c", "cursor": {}})
    assert code == 40414
    assert name == "Location40414"
    assert msg == "BSON field 'aggregate.pipeline' is missing but a required field"
    code, _, msg = command_error(db, {"insert": "c"})
    assert code == 40414
    assert msg == "BSON field 'insert.documents' is missing but a required field"


def test_aggregate_without_cursor_is_failed_to_parse(db):
    code, name, msg = command_error(db, {"aggregate": "c", "pipeline": []})
    assert (code, name) == (9, "FailedToParse")
    assert "'cursor' option is required" in msg


def test_generic_arguments_are_not_unknown(db):
    r = db.command(
        {"find": "c", "filter": {}, "comment": {"any": "thing"}, "maxTimeMS": 1000,
         "readConcern": {"level": "local"}}
    )
    assert r["ok"] == 1


# -- query and update language errors -----------------------------------------------------------
def test_unknown_top_level_operator(db):
    code, name, msg = command_error(db, {"find": "c", "filter": {"$bogus": 1}})
    assert (code, name) == (2, "BadValue")
    assert msg.startswith("unknown top level operator: $bogus")


def test_unknown_field_operator(db):
    code, name, msg = command_error(db, {"find": "c", "filter": {"a": {"$bogus": 1}}})
    assert (code, name) == (2, "BadValue")
    assert msg == "unknown operator: $bogus"


def test_in_needs_an_array(db):
    code, name, msg = command_error(db, {"find": "c", "filter": {"a": {"$in": 5}}})
    assert (code, name) == (2, "BadValue")
    assert msg == "$in needs an array"


def test_and_needs_nonempty_array(db):
    code, name, msg = command_error(db, {"find": "c", "filter": {"$and": []}})
    assert (code, name) == (2, "BadValue")
    assert msg == "$and/$or/$nor must be a nonempty array"


def test_unknown_type_alias(db):
    code, name, msg = command_error(db, {"find": "c", "filter": {"a": {"$type": "nosuch"}}})
    assert (code, name) == (2, "BadValue")
    assert msg == "Unknown type name alias: nosuch"


def test_unknown_update_modifier(db):
    db.c.insert_one({"_id": 1})
    r = db.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$bogus": {"a": 1}}}]})
    # A bad update statement is a per-statement write error inside ok: 1.
    assert r["ok"] == 1
    assert r["n"] == 0
    we = r["writeErrors"][0]
    assert we["index"] == 0
    assert we["code"] == 9
    assert we["errmsg"].startswith("Unknown modifier: $bogus")


def test_conflicting_update_operators(db):
    db.c.insert_one({"_id": 1, "a": 1})
    r = db.command(
        {"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"a": 2}, "$inc": {"a": 1}}}]}
    )
    we = r["writeErrors"][0]
    assert we["code"] == 40
    assert we["errmsg"] == "Updating the path 'a' would create a conflict at 'a'"


def test_inc_on_non_number(db):
    db.c.insert_one({"_id": 1, "s": "text"})
    r = db.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"s": 1}}}]})
    we = r["writeErrors"][0]
    assert we["index"] == 0
    assert we["code"] == 14
    assert "Cannot apply $inc to a value of non-numeric type" in we["errmsg"]
    r = db.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$inc": {"n": "x"}}}]})
    we = r["writeErrors"][0]
    assert we["code"] == 14
    assert "Cannot increment with non-numeric argument" in we["errmsg"]


def test_update_of_immutable_id(db):
    db.c.insert_one({"_id": 1})
    r = db.command({"update": "c", "updates": [{"q": {"_id": 1}, "u": {"$set": {"_id": 2}}}]})
    we = r["writeErrors"][0]
    assert we["code"] == 66
    assert "_id" in we["errmsg"] and "immutable" in we["errmsg"]
    assert db.c.find_one() == {"_id": 1}


def test_unrecognized_pipeline_stage(db):
    code, _, msg = command_error(
        db, {"aggregate": "c", "pipeline": [{"$bogusStage": {}}], "cursor": {}}
    )
    assert code == 40324
    assert msg == "Unrecognized pipeline stage name: '$bogusStage'"


def test_group_requires_id(db):
    code, _, msg = command_error(
        db, {"aggregate": "c", "pipeline": [{"$group": {"n": {"$sum": 1}}}], "cursor": {}}
    )
    assert code == 15955
    assert msg == "a group specification must include an _id"


# -- namespaces ------------------------------------------------------------------------------
def test_invalid_database_name(server):
    s = wire.connect(server.port)
    try:
        r = wire.command(s, {"find": "c", "$db": "bad.name"})
        assert r["ok"] == 0
        assert (r["code"], r["codeName"]) == (73, "InvalidNamespace")
        assert "Invalid database name" in r["errmsg"]
        r = wire.command(s, {"insert": "c", "documents": [{}], "$db": "bad$name"})
        assert (r["ok"], r["code"]) == (0, 73)
        # The connection stays usable.
        assert wire.command(s, {"ping": 1, "$db": "admin"})["ok"] == 1
    finally:
        s.close()


def test_empty_collection_name(db):
    code, name, msg = command_error(db, {"find": ""})
    assert (code, name) == (73, "InvalidNamespace")
    assert msg == f"Invalid namespace specified '{db.name}.'"
    code, name, _ = command_error(db, {"create": ""})
    assert (code, name) == (73, "InvalidNamespace")


def test_collection_name_must_be_a_string(db):
    code, name, msg = command_error(db, {"insert": 5, "documents": [{}]})
    assert (code, name) == (73, "InvalidNamespace")
    assert msg == "collection name has invalid type int"


def test_create_existing_collection(db):
    db.command({"create": "c"})
    # MongoDB 7.0 (SERVER-60064): re-creating with identical options succeeds...
    assert db.command({"create": "c"})["ok"] == 1
    # ...while different options are a NamespaceExists error.
    code, name, msg = command_error(db, {"create": "c", "timeseries": {"timeField": "t"}})
    assert (code, name) == (48, "NamespaceExists")
    assert "already exists" in msg


def test_drop_missing_collection_succeeds(db):
    # Changed in MongoDB 7.0: no NamespaceNotFound for a missing collection.
    assert run_command(db, {"drop": "absent"})["ok"] == 1


def test_admin_only_command_elsewhere(db):
    code, name, msg = command_error(db, {"listDatabases": 1})
    assert (code, name) == (13, "Unauthorized")
    assert msg == "listDatabases may only be run against the admin database."


def test_get_more_wrong_collection(db):
    db.c.insert_many([{} for _ in range(5)])
    cid = db.command({"find": "c", "batchSize": 1})["cursor"]["id"]
    code, name, _ = command_error(db, {"getMore": Int64(cid), "collection": "other"})
    assert (code, name) == (13, "Unauthorized")
    db.command({"killCursors": "c", "cursors": [Int64(cid)]})

"""Decimal128 arithmetic: expressions, conversions, accumulators, windows and update operators.

Table-driven. Expected values come from MongoDB 7.0's documented semantics and from decimal
arithmetic itself (IEEE 754-2008 decimal128: 34 significant digits, ties to even), checked with
Python's `decimal` module where that helps, never by running our server:
  * any decimal operand makes the result a decimal; ints join exactly, doubles with 15
    significant digits (0.2 -> 0.200000000000000), as MongoDB coerces them;
  * $divide / $mod by a zero of any type fail (16608 / 16610);
  * decimal -> int/long conversions truncate toward zero, exactly; overflow fails (241);
  * $stdDevPop / $stdDevSamp answer doubles.
Dec("x") matches a Decimal128 equal in value to x; Exact("x") a Decimal128 whose string form is
exactly x (the representation, trailing zeros included).
"""

import datetime
import decimal

import pytest
from bson import Int64
from bson.decimal128 import Decimal128
from pymongo import ReturnDocument
from pymongo.errors import OperationFailure

CTX = decimal.Context(prec=34, rounding=decimal.ROUND_HALF_EVEN, Emin=-6143, Emax=6144)


def d(s):
    return Decimal128(s)


class Err:
    def __init__(self, code):
        self.code = code

    def __repr__(self):
        return f"Err({self.code})"


class Dec:
    """A Decimal128 equal in value to `value` (NaN matches NaN), or within `rel` of it."""

    def __init__(self, value, rel=0):
        self.value = decimal.Decimal(value)
        self.rel = decimal.Decimal(rel)

    def __eq__(self, other):
        if not isinstance(other, Decimal128):
            return False
        got = other.to_decimal()
        if self.value.is_nan():
            return got.is_nan()
        if self.value.is_infinite() or got.is_infinite():
            return got == self.value
        return abs(got - self.value) <= abs(self.value) * self.rel

    def __repr__(self):
        return f"Dec({self.value}, rel={self.rel})"


def DecNear(value):
    """The library's transcendental functions are accurate to about 34 digits but not always
    correctly rounded."""
    return Dec(value, rel="1e-30")


class Exact:
    """A Decimal128 whose string form is exactly `text`."""

    def __init__(self, text):
        self.text = text

    def __eq__(self, other):
        return isinstance(other, Decimal128) and str(other) == self.text

    def __repr__(self):
        return f"Exact({self.text})"


THIRD = str(CTX.divide(decimal.Decimal(1), decimal.Decimal(3)))
SEVEN_SIXTHS = str(CTX.divide(decimal.Decimal("3.5"), decimal.Decimal(3)))

EXPRESSIONS = [
    # ---- $add: exact decimal sums, promotion of the other operands
    ({"$add": [d("0.1"), d("0.2")]}, Exact("0.3")),
    ({"$add": [d("1.10"), d("2.205")]}, Exact("3.305")),
    ({"$add": [d("1"), 2]}, Exact("3")),
    ({"$add": [d("1"), Int64(2)]}, Exact("3")),
    ({"$add": [1, 2, d("0.5")]}, Dec("3.5")),
    # the double joins with 15 digits: 0.200000000000000, so the sum is exactly 0.3
    ({"$add": [d("0.1"), 0.2]}, Dec("0.3")),
    ({"$add": [d("1"), 0.5]}, Dec("1.5")),
    ({"$add": [d("9999999999999999999999999999999999"), 1]}, Dec("1E+34")),
    ({"$add": [d("1234567890123456789012345678901234"), d("0.5")]},
     Dec("1234567890123456789012345678901234")),
    ({"$add": [d("1234567890123456789012345678901235"), d("0.5")]},
     Dec("1234567890123456789012345678901236")),
    ({"$add": [d("Infinity"), 1]}, Dec("Infinity")),
    ({"$add": [d("Infinity"), d("-Infinity")]}, Dec("NaN")),
    ({"$add": [d("1"), None]}, None),
    ({"$add": [datetime.datetime(2020, 1, 1), d("1000")]}, datetime.datetime(2020, 1, 1, 0, 0, 1)),
    ({"$add": [d("1"), "x"]}, Err(16554)),
    # ---- $subtract / $multiply
    ({"$subtract": [d("1"), d("0.9")]}, Exact("0.1")),
    ({"$subtract": [5, d("0.5")]}, Dec("4.5")),
    ({"$subtract": [d("0.3"), 0.1]}, Dec("0.2")),
    ({"$multiply": [d("1.5"), d("2.00")]}, Exact("3.000")),
    ({"$multiply": [d("0.1"), 3]}, Exact("0.3")),
    ({"$multiply": [2, Int64(3), d("0.5")]}, Dec("3")),
    ({"$multiply": [d("1E+6000"), d("1E+6000")]}, Dec("Infinity")),
    # ---- $divide / $mod
    ({"$divide": [d("1"), d("3")]}, Exact(THIRD)),
    ({"$divide": [1, d("4")]}, Exact("0.25")),
    ({"$divide": [d("10"), 4]}, Dec("2.5")),
    ({"$divide": [d("1"), d("0")]}, Err(16608)),
    ({"$divide": [d("1"), 0]}, Err(16608)),
    ({"$divide": [d("1"), d("-0.00")]}, Err(16608)),
    ({"$divide": [1, d("0E+10")]}, Err(16608)),
    ({"$mod": [d("7.5"), 2]}, Dec("1.5")),
    ({"$mod": [d("-7"), 3]}, Dec("-1")),
    ({"$mod": [7, d("-3")]}, Dec("1")),
    ({"$mod": [d("1"), d("0")]}, Err(16610)),
    ({"$mod": [d("1"), 0.0]}, Err(16610)),
    # ---- one-argument operators
    ({"$abs": d("-1.50")}, Exact("1.50")),
    ({"$abs": d("-Infinity")}, Dec("Infinity")),
    ({"$ceil": d("1.2")}, Dec("2")),
    ({"$ceil": d("-0.5")}, Dec("0")),
    ({"$floor": d("-1.5")}, Dec("-2")),
    ({"$floor": d("123456789012345678901234567890.9")}, Dec("123456789012345678901234567890")),
    ({"$sqrt": d("2")}, Exact("1.414213562373095048801688724209698")),
    ({"$sqrt": d("16")}, Dec("4")),
    ({"$sqrt": d("-1")}, Err(28714)),
    ({"$exp": d("1")}, Exact("2.718281828459045235360287471352662")),
    ({"$exp": d("0")}, Dec("1")),
    ({"$ln": d("1")}, Dec("0")),
    ({"$ln": d("0")}, Err(28766)),
    ({"$ln": d("-1")}, Err(28766)),
    ({"$log10": d("1000")}, Dec("3")),
    ({"$log10": d("0")}, Err(28761)),
    ({"$log": [d("8"), 2]}, Dec("3")),
    ({"$log": [d("100"), d("10")]}, Dec("2")),
    ({"$log": [100, d("10")]}, Dec("2")),
    ({"$log": [d("5"), d("1")]}, Err(28759)),
    ({"$log": [d("-1"), 10]}, Err(28758)),
    ({"$pow": [d("2"), 10]}, Dec("1024")),
    ({"$pow": [d("1.1"), 2]}, Dec("1.21")),
    ({"$pow": [2, d("-1")]}, Dec("0.5")),
    ({"$pow": [d("0"), -1]}, Err(28764)),
    # ---- trigonometry in decimal
    ({"$sin": d("0")}, Dec("0")),
    ({"$cos": d("0")}, Dec("1")),
    ({"$sin": d("1")}, DecNear("0.8414709848078965066525023216302990")),
    ({"$atan2": [d("1"), d("1")]}, DecNear("0.7853981633974483096156608458198757")),
    ({"$atan2": [1, d("1")]}, DecNear("0.7853981633974483096156608458198757")),
    ({"$degreesToRadians": d("180")}, DecNear("3.141592653589793238462643383279503")),
    ({"$radiansToDegrees": d("3.141592653589793238462643383279503")}, DecNear("180")),
    ({"$asin": d("2")}, Err(50989)),
    # ---- $round (ties to even) and $trunc, with places
    ({"$round": [d("1.25"), 1]}, Exact("1.2")),
    ({"$round": [d("1.35"), 1]}, Exact("1.4")),
    ({"$round": [d("2.5")]}, Dec("2")),
    ({"$round": [d("3.5"), 0]}, Dec("4")),
    ({"$round": [d("1234.5678"), 2]}, Exact("1234.57")),
    ({"$round": [d("1234.5678"), -2]}, Dec("1200")),
    ({"$round": [d("1234.5678"), -4]}, Dec("0")),
    ({"$round": [d("NaN"), 1]}, Dec("NaN")),
    ({"$round": [d("Infinity"), 1]}, Dec("Infinity")),
    ({"$round": [d("1.5"), 101]}, Err(51083)),
    ({"$trunc": [d("19.25"), 1]}, Exact("19.2")),
    ({"$trunc": [d("-45.34"), 1]}, Exact("-45.3")),
    ({"$trunc": [d("1234.5678"), -2]}, Dec("1200")),
    ({"$trunc": [d("-2.7")]}, Dec("-2")),
    # ---- comparisons are exact across numeric types
    ({"$eq": [d("0.3"), {"$add": [d("0.1"), d("0.2")]}]}, True),
    ({"$eq": [d("1.0"), 1]}, True),
    ({"$eq": [d("1.00"), Int64(1)]}, True),
    ({"$lt": [d("0.1"), 0.1]}, True),  # the double 0.1 is 0.1000000000000000055...
    ({"$eq": [d("9007199254740993"), Int64(9007199254740993)]}, True),
    ({"$eq": [d("9007199254740993"), 9007199254740992.0]}, False),
    ({"$cmp": [d("2.5"), 2]}, 1),
    # ---- conversions
    ({"$toDecimal": 2.5}, Exact("2.50000000000000")),
    ({"$toDecimal": 0.1}, Exact("0.100000000000000")),
    ({"$toDecimal": Int64(9007199254740993)}, Exact("9007199254740993")),
    ({"$toDecimal": 5}, Exact("5")),
    ({"$toDecimal": True}, Exact("1")),
    ({"$toDecimal": datetime.datetime(2018, 3, 26, 4, 38, 28, 44000)}, Exact("1522039108044")),
    ({"$toDecimal": "1.234567890123456789012345678901234"},
     Exact("1.234567890123456789012345678901234")),
    ({"$toDecimal": "-0"}, Exact("-0")),
    # more than 34 digits round (ties to even); bad syntax and overflow fail
    ({"$toDecimal": "0.12345678901234567890123456789012345"},
     Exact("0.1234567890123456789012345678901234")),
    ({"$toDecimal": "1.000000000000000000000000000000000001"},
     Exact("1.000000000000000000000000000000000")),
    ({"$toDecimal": "1e5"}, Dec("100000")),
    ({"$toDecimal": "1.5x"}, Err(241)),
    ({"$toDecimal": "1E+7000"}, Err(241)),
    ({"$toLong": d("9007199254740993")}, 9007199254740993),
    ({"$toLong": d("-2.7")}, -2),
    ({"$toInt": d("2147483647.9")}, 2147483647),
    ({"$toInt": d("2147483648")}, Err(241)),
    ({"$toLong": d("1E+19")}, Err(241)),
    ({"$toInt": d("NaN")}, Err(241)),
    ({"$toLong": d("-Infinity")}, Err(241)),
    ({"$convert": {"input": d("1E+19"), "to": "long", "onError": "bad"}}, "bad"),
    ({"$toDate": d("1522039108044.9")}, datetime.datetime(2018, 3, 26, 4, 38, 28, 44000)),
    ({"$toDate": d("NaN")}, Err(241)),
    ({"$toDouble": d("0.1")}, 0.1),
    ({"$toDouble": d("1E+400")}, Err(241)),
    ({"$toBool": d("0.000")}, False),
    ({"$toBool": d("1E-400")}, True),
    ({"$toString": d("1.0")}, "1.0"),
    ({"$toString": d("1E+10")}, "1E+10"),
    ({"$toString": d("-0")}, "-0"),
    ({"$toString": d("NaN")}, "NaN"),
    ({"$toString": d("-Infinity")}, "-Infinity"),
    ({"$toString": {"$add": [d("0.1"), d("0.2")]}}, "0.3"),
    # ---- $sum / $avg as expressions use the accumulators' rules
    ({"$sum": [[d("0.1"), d("0.2"), "x"]]}, Exact("0.3")),
    ({"$sum": [d("0.1"), 1]}, Dec("1.1")),
    ({"$avg": [[d("1"), d("2")]]}, Dec("1.5")),
    ({"$avg": [[1, 2, d("0.5")]]}, Exact(SEVEN_SIXTHS)),
]


def _evaluate(db, expr):
    out = list(db.aggregate([{"$documents": [{}]}, {"$project": {"_id": 0, "r": expr}}]))
    assert len(out) == 1
    return out[0].get("r")


@pytest.mark.parametrize("expr,expected", EXPRESSIONS,
                         ids=[f"{i}-{next(iter(c[0]))}" for i, c in enumerate(EXPRESSIONS)])
def test_expression(db, expr, expected):
    if isinstance(expected, Err):
        with pytest.raises(OperationFailure) as e:
            _evaluate(db, expr)
        assert e.value.code == expected.code, e.value.details
        return
    got = _evaluate(db, expr)
    assert got == expected, got
    if isinstance(expected, (bool, int, float)) and not isinstance(expected, bool):
        assert not isinstance(got, Decimal128)


# (values of v, accumulator, expected)
ACCUMULATORS = [
    ([d("0.1")] * 10, {"$sum": "$v"}, Exact("1.0")),
    ([d("0.1")] * 10, {"$avg": "$v"}, Dec("0.1")),
    ([d("0.1"), d("0.2"), 1], {"$sum": "$v"}, Dec("1.3")),
    ([1, 2, d("0.5")], {"$sum": "$v"}, Dec("3.5")),
    ([1, 2, d("0.5")], {"$avg": "$v"}, Exact(SEVEN_SIXTHS)),
    ([d("1"), 0.5], {"$sum": "$v"}, Dec("1.5")),
    ([d("1"), "x", None], {"$sum": "$v"}, Exact("1")),
    ([Int64(2**62), Int64(2**62), d("0")], {"$sum": "$v"}, Dec(2**63)),
    ([d("1"), d("3")], {"$stdDevPop": "$v"}, 1.0),
    ([d("1"), d("3")], {"$stdDevSamp": "$v"}, 2 ** 0.5),
    ([d("1"), d("2.5"), 3], {"$max": "$v"}, 3),
    ([d("1"), d("2.5"), 3], {"$min": "$v"}, Exact("1")),
]


@pytest.mark.parametrize("values,acc,expected", ACCUMULATORS,
                         ids=[f"{i}-{next(iter(c[1]))}" for i, c in enumerate(ACCUMULATORS)])
def test_group_accumulator(db, values, acc, expected):
    db.c.insert_many([{"_id": i, "v": v} for i, v in enumerate(values)])
    out = list(db.c.aggregate([{"$group": {"_id": None, "r": acc}}]))
    got = out[0]["r"]
    if isinstance(expected, float):
        assert isinstance(got, float) and abs(got - expected) < 1e-12, got
    else:
        assert got == expected, got


def test_group_accumulator_spills_decimals(db):
    # allowDiskUse with a tiny memory limit merges partial sums: the decimal total must survive.
    db.c.insert_many([{"_id": i, "g": i % 50, "v": d("0.1")} for i in range(500)])
    admin = db.client.admin
    old = admin.command("getParameter", 1,
                        internalDocumentSourceGroupMaxMemoryBytes=1)[
        "internalDocumentSourceGroupMaxMemoryBytes"]
    admin.command("setParameter", 1, internalDocumentSourceGroupMaxMemoryBytes=2000)
    try:
        out = list(db.c.aggregate(
            [{"$group": {"_id": "$g", "s": {"$sum": "$v"}, "a": {"$avg": "$v"}}}],
            allowDiskUse=True))
    finally:
        admin.command("setParameter", 1, internalDocumentSourceGroupMaxMemoryBytes=old)
    assert len(out) == 50
    for doc in out:
        assert doc["s"] == Exact("1.0"), doc
        assert doc["a"] == Dec("0.1"), doc


def test_window_sum_and_avg_are_decimal(db):
    db.c.insert_many([{"_id": i, "v": d(v)} for i, v in enumerate(["0.1", "0.2", "0.3"])])
    out = list(db.c.aggregate([
        {"$setWindowFields": {"sortBy": {"_id": 1}, "output": {
            "run": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}},
            "pair": {"$sum": "$v", "window": {"documents": [-1, 0]}},
            "avg": {"$avg": "$v", "window": {"documents": ["unbounded", "unbounded"]}},
        }}},
        {"$sort": {"_id": 1}},
    ]))
    assert [o["run"] for o in out] == [Exact("0.1"), Exact("0.3"), Exact("0.6")]
    assert [o["pair"] for o in out] == [Exact("0.1"), Exact("0.3"), Exact("0.5")]
    assert [o["avg"] for o in out] == [Dec("0.2")] * 3


# (stored value or MISSING, update, expected value of v or Err)
MISSING = object()
UPDATES = [
    (d("0.1"), {"$inc": {"v": d("0.2")}}, Exact("0.3")),
    (1, {"$inc": {"v": d("0.5")}}, Dec("1.5")),
    (Int64(5), {"$mul": {"v": d("1.5")}}, Dec("7.5")),
    (d("2.5"), {"$inc": {"v": 1}}, Dec("3.5")),
    (d("2.5"), {"$inc": {"v": Int64(1)}}, Dec("3.5")),
    (d("2.5"), {"$mul": {"v": 2}}, Dec("5")),
    (d("1"), {"$inc": {"v": 0.5}}, Dec("1.5")),
    (1.5, {"$inc": {"v": d("1")}}, Dec("2.5")),
    (d("0.1"), {"$mul": {"v": d("0.1")}}, Exact("0.01")),
    (d("9999999999999999999999999999999999"), {"$inc": {"v": 1}}, Dec("1E+34")),
    (d("NaN"), {"$inc": {"v": 1}}, Dec("NaN")),
    (MISSING, {"$inc": {"v": d("1.5")}}, Exact("1.5")),
    (MISSING, {"$mul": {"v": d("1.5")}}, Dec("0")),
    ("x", {"$inc": {"v": d("1")}}, Err(14)),
    (d("1"), {"$inc": {"v": "x"}}, Err(14)),
    (Int64(2**63 - 1), {"$inc": {"v": 1}}, Err(2)),  # int64 overflow still fails
    (2**31 - 1, {"$inc": {"v": 1}}, 2**31),  # int32 overflow still widens
]


@pytest.mark.parametrize("stored,update,expected", UPDATES,
                         ids=[f"{i}-{next(iter(c[1]))}" for i, c in enumerate(UPDATES)])
def test_update_operator(db, stored, update, expected):
    db.c.insert_one({"_id": 1} if stored is MISSING else {"_id": 1, "v": stored})
    if isinstance(expected, Err):
        with pytest.raises(OperationFailure) as e:
            db.c.update_one({"_id": 1}, update)
        assert e.value.code == expected.code, e.value.details
        return
    db.c.update_one({"_id": 1}, update)
    got = db.c.find_one({"_id": 1})["v"]
    assert got == expected, got
    if isinstance(expected, int):
        assert not isinstance(got, Decimal128)


def test_upsert_and_find_and_modify_with_decimal(db):
    db.c.update_one({"_id": 1}, {"$inc": {"v": d("0.1")}}, upsert=True)
    doc = db.c.find_one_and_update({"_id": 1}, {"$inc": {"v": d("0.2")}},
                                   return_document=ReturnDocument.AFTER)
    assert doc["v"] == Exact("0.3")
    # the stored decimal matches exactly in a filter
    assert db.c.count_documents({"v": d("0.3")}) == 1
    assert db.c.count_documents({"v": 0.3}) == 0  # the double 0.3 is not 0.3 exactly


# $bucketAuto with a granularity keeps decimal boundaries decimal (and exact).
BUCKET_AUTO = [
    ([d("1"), d("2"), d("3"), d("4")], 2, "R5",
     [(Dec("0.63"), Dec("2.5"), 2), (Dec("2.5"), Dec("6.3"), 2)]),
    ([d("3"), d("5")], 1, "POWERSOF2", [(Dec("2"), Dec("8"), 2)]),
    ([d("0.1"), d("0.2")], 1, "1-2-5", [(Dec("0.05"), Dec("0.5"), 2)]),
    ([d("-1E-400")], 1, "R5", Err(40260)),
    ([d("NaN")], 1, "R5", Err(40259)),
]


@pytest.mark.parametrize("values,buckets,granularity,expected", BUCKET_AUTO,
                         ids=[f"{i}-{c[2]}" for i, c in enumerate(BUCKET_AUTO)])
def test_bucket_auto_granularity_with_decimals(db, values, buckets, granularity, expected):
    db.c.insert_many([{"_id": i, "v": v} for i, v in enumerate(values)])
    pipeline = [{"$bucketAuto": {"groupBy": "$v", "buckets": buckets,
                                 "granularity": granularity}}]
    if isinstance(expected, Err):
        with pytest.raises(OperationFailure) as e:
            list(db.c.aggregate(pipeline))
        assert e.value.code == expected.code, e.value.details
        return
    out = [(b["_id"]["min"], b["_id"]["max"], b["count"]) for b in db.c.aggregate(pipeline)]
    assert out == expected


def _window(db, values, output):
    db.c.insert_many([{"_id": i, "t": i, "v": v} for i, v in enumerate(values)])
    out = list(db.c.aggregate([
        {"$setWindowFields": {"sortBy": {"t": 1}, "output": {"r": output}}},
        {"$sort": {"t": 1}},
    ]))
    return [o.get("r") for o in out]


def test_exp_moving_avg_with_decimals(db):
    got = _window(db, [d("1"), d("2"), d("3")], {"$expMovingAvg": {"input": "$v", "N": 2}})
    # alpha = 2/3: 1, 2*2/3 + 1/3 = 5/3, 3*2/3 + 5/9 = 23/9
    assert got == [Exact("1"), DecNear("1.666666666666666666666666666666667"),
                   DecNear("2.555555555555555555555555555555556")]


def test_exp_moving_avg_turns_decimal_at_the_first_decimal(db):
    got = _window(db, [1, d("2"), d("4")], {"$expMovingAvg": {"input": "$v", "alpha": 0.5}})
    assert got[0] == 1.0 and isinstance(got[0], float)
    assert got[1:] == [Dec("1.5"), Dec("2.75")]


def test_covariance_turns_decimal_with_a_decimal(db):
    # x = t (0, 1, 2), y = v: sum of (x - 1) * (y - 0.7 / 3) = 0.3; over 3 (pop) and 2 (samp).
    window = {"documents": ["unbounded", "unbounded"]}
    got = _window(db, [d("0.1"), d("0.2"), d("0.4")],
                  {"$covariancePop": ["$t", "$v"], "window": window})
    assert got == [DecNear("0.1")] * 3
    db.c.drop()
    got = _window(db, [0.1, d("0.2"), 0.4], {"$covarianceSamp": ["$t", "$v"], "window": window})
    assert got == [DecNear("0.15")] * 3
    db.c.drop()
    got = _window(db, [0.1, 0.2, 0.4], {"$covarianceSamp": ["$t", "$v"], "window": window})
    assert all(isinstance(g, float) and abs(g - 0.15) < 1e-12 for g in got)


def test_derivative_and_integral_with_decimals(db):
    got = _window(db, [d("0"), d("0.1"), d("0.3")],
                  {"$derivative": {"input": "$v"}, "window": {"documents": [-1, 0]}})
    assert got == [None, Dec("0.1"), Dec("0.2")]
    db.c.drop()
    got = _window(db, [d("0"), d("0.1"), d("0.3")],
                  {"$integral": {"input": "$v"}, "window": {"documents": ["unbounded", "current"]}})
    assert got == [Dec("0"), Dec("0.05"), Dec("0.25")]


def test_densify_steps_in_decimal(db):
    db.c.insert_many([{"_id": 0, "v": d("0")}, {"_id": 1, "v": d("1")}])
    out = list(db.c.aggregate([
        {"$densify": {"field": "v", "range": {"step": d("0.25"), "bounds": "full"}}},
        {"$project": {"_id": 0, "v": 1}},
    ]))
    assert [o["v"] for o in out] == [Exact("0"), Exact("0.25"), Exact("0.50"), Exact("0.75"),
                                     Exact("1")]
    db.c.drop()
    # integer values with a decimal step: the generated values are exact decimals (no 0.3000...4)
    db.c.insert_many([{"_id": 0, "v": 0}, {"_id": 1, "v": 1}])
    out = list(db.c.aggregate([
        {"$densify": {"field": "v", "range": {"step": d("0.1"), "bounds": "full"}}},
        {"$project": {"_id": 0, "v": 1}},
    ]))
    assert [o["v"] for o in out] == [0] + [Exact(f"0.{i}") for i in range(1, 10)] + [1]


def test_linear_fill_in_decimal(db):
    got = _window(db, [d("1"), None, None, d("2")], {"$linearFill": "$v"})
    # x = 0..3: the gaps are 1 + 1/3 and 1 + 2/3, in decimal
    assert got == [Exact("1"), DecNear("1.333333333333333333333333333333333"),
                   DecNear("1.666666666666666666666666666666667"), Exact("2")]

"""Aggregation expression operators and $group accumulators, table-driven.

Each case is (expression, input document, expected): the expression is evaluated by
[{$documents: [doc]}, {$project: {_id: 0, r: <expr>}}] and `r` compared with `expected`;
Err(code) expects the aggregate to fail with that code; MISSING expects no `r`. Expected values
come from MongoDB 7.0's documented semantics (many from the manual's examples), not from
running our server.
"""

import datetime
import math

import pytest
from bson import Binary, Int64, Regex, Timestamp
from pymongo.errors import OperationFailure


class Err:
    def __init__(self, code):
        self.code = code

    def __repr__(self):
        return f"Err({self.code})"


class Approx:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, float) and math.isclose(other, self.value, rel_tol=1e-12,
                                                         abs_tol=1e-12)

    def __repr__(self):
        return f"Approx({self.value})"


class SetOf:
    """An array compared without regard to order (set operators leave order unspecified)."""

    def __init__(self, *members):
        self.members = sorted(members, key=repr)

    def __eq__(self, other):
        return isinstance(other, list) and sorted(other, key=repr) == self.members

    def __repr__(self):
        return f"SetOf({self.members})"


MISSING = object()


def D(*parts):
    return datetime.datetime(*parts)


NY = "America/New_York"

CASES = [
    # ---- time zones in the date part operators
    ({"$hour": {"date": D(2020, 3, 8, 6, 30), "timezone": NY}}, {}, 1),  # EST, before DST
    ({"$hour": {"date": D(2020, 3, 8, 7, 30), "timezone": NY}}, {}, 3),  # EDT after 07:00Z
    ({"$hour": {"date": D(2020, 7, 1, 12), "timezone": "Europe/London"}}, {}, 13),
    ({"$hour": {"date": D(2020, 1, 1, 12), "timezone": "Europe/London"}}, {}, 12),
    ({"$hour": {"date": D(2020, 1, 1), "timezone": "+0530"}}, {}, 5),
    ({"$minute": {"date": D(2020, 1, 1), "timezone": "+05:30"}}, {}, 30),
    ({"$hour": {"date": D(2020, 1, 1), "timezone": "-03"}}, {}, 21),
    ({"$dayOfMonth": {"date": D(2020, 1, 1), "timezone": "-03"}}, {}, 31),
    ({"$year": {"date": D(2020, 1, 1), "timezone": "-03:00"}}, {}, 2019),
    ({"$dayOfWeek": {"date": D(2020, 1, 1, 2), "timezone": "America/Los_Angeles"}}, {}, 3),
    ({"$year": {"date": D(9999, 12, 31, 12), "timezone": NY}}, {}, 9999),
    ({"$year": {"date": D(1, 1, 1, 12), "timezone": NY}}, {}, 1),
    ({"$dayOfYear": {"date": D(2020, 12, 31, 12), "timezone": "Pacific/Kiritimati"}}, {}, 1),
    ({"$hour": {"date": D(2020, 1, 1), "timezone": "Mars/Olympus"}}, {}, Err(40485)),
    ({"$hour": {"date": D(2020, 1, 1), "timezone": "+5"}}, {}, Err(40485)),
    ({"$hour": {"date": D(2020, 1, 1), "timezone": 5}}, {}, Err(40517)),
    ({"$hour": {"date": D(2020, 1, 1), "timezone": None}}, {}, None),
    ({"$hour": {"date": "$nope", "timezone": NY}}, {}, None),
    ({"$month": {"date": "$tz_d", "timezone": "$tz"}},
     {"tz_d": D(2021, 1, 1, 3), "tz": "Asia/Tokyo"}, 1),
    ({"$month": {"date": D(2021, 1, 1, 2), "timezone": "America/Sao_Paulo"}}, {}, 12),
    # ---- ISO week operators and $week
    ({"$isoWeek": D(2021, 1, 1)}, {}, 53),
    ({"$isoWeekYear": D(2021, 1, 1)}, {}, 2020),
    ({"$isoDayOfWeek": D(2021, 1, 1)}, {}, 5),
    ({"$isoWeek": D(2019, 12, 30)}, {}, 1),
    ({"$isoWeekYear": D(2019, 12, 30)}, {}, 2020),
    ({"$isoDayOfWeek": D(2021, 1, 3)}, {}, 7),
    ({"$isoWeek": {"date": D(2021, 1, 4, 2), "timezone": NY}}, {}, 53),  # still Sunday in NY
    ({"$week": D(2021, 1, 1)}, {}, 0),
    ({"$week": D(2021, 1, 3)}, {}, 1),
    ({"$isoWeek": None}, {}, None),
    ({"$isoWeek": "x"}, {}, Err(16006)),
    # ---- $dateToString
    ({"$dateToString": {"date": D(2020, 7, 1, 12), "timezone": NY,
                        "format": "%Y-%m-%d %H:%M:%S %z"}}, {}, "2020-07-01 08:00:00 -0400"),
    ({"$dateToString": {"date": D(2020, 7, 1, 12), "timezone": NY, "format": "%Z"}}, {}, "-240"),
    ({"$dateToString": {"date": D(2020, 1, 1, 12), "timezone": NY, "format": "%Z"}}, {}, "-300"),
    ({"$dateToString": {"date": D(2020, 7, 1, 12), "timezone": "+01:00"}}, {},
     "2020-07-01T13:00:00.000"),
    ({"$dateToString": {"date": D(2020, 7, 1, 12)}}, {}, "2020-07-01T12:00:00.000Z"),
    ({"$dateToString": {"date": D(2020, 2, 1), "format": "%j"}}, {}, "032"),
    ({"$dateToString": {"date": D(2021, 1, 3), "format": "%U"}}, {}, "01"),
    ({"$dateToString": {"date": D(2021, 1, 1), "format": "%G-W%V-%u"}}, {}, "2020-W53-5"),
    ({"$dateToString": {"date": D(2021, 1, 1), "format": "%w"}}, {}, "6"),
    ({"$dateToString": {"date": D(2021, 1, 1), "format": "100%%"}}, {}, "100%"),
    ({"$dateToString": {"date": D(2021, 9, 1), "format": "%b %B"}}, {}, "Sep September"),
    ({"$dateToString": {"date": D(2021, 1, 1), "format": "%Q"}}, {}, Err(18536)),
    ({"$dateToString": {"date": D(2021, 1, 1), "format": "abc%"}}, {}, Err(18535)),
    ({"$dateToString": {"date": D(2021, 1, 1), "format": 5}}, {}, Err(18533)),
    ({"$dateToString": {"date": "$nope", "onNull": "none"}}, {}, "none"),
    ({"$dateToString": {"date": D(2021, 1, 1), "timezone": "Nowhere/Land"}}, {}, Err(40485)),
    # ---- $dateTrunc
    ({"$dateTrunc": {"date": D(2020, 3, 8, 12), "unit": "day", "timezone": NY}}, {},
     D(2020, 3, 8, 5)),  # local midnight was still EST
    ({"$dateTrunc": {"date": D(2020, 3, 9, 12), "unit": "day", "timezone": NY}}, {},
     D(2020, 3, 9, 4)),
    ({"$dateTrunc": {"date": D(2021, 1, 1, 3, 45), "unit": "hour", "binSize": 2}}, {},
     D(2021, 1, 1, 2)),
    ({"$dateTrunc": {"date": D(2021, 1, 1, 3, 45), "unit": "hour", "timezone": "+05:30"}}, {},
     D(2021, 1, 1, 3, 30)),
    ({"$dateTrunc": {"date": D(2021, 1, 7), "unit": "week", "startOfWeek": "monday"}}, {},
     D(2021, 1, 4)),
    ({"$dateTrunc": {"date": D(2021, 1, 7), "unit": "week", "startOfWeek": "MON"}}, {},
     D(2021, 1, 4)),
    ({"$dateTrunc": {"date": D(2021, 1, 7), "unit": "week"}}, {}, D(2021, 1, 3)),
    ({"$dateTrunc": {"date": D(2021, 5, 15), "unit": "month", "binSize": 3}}, {}, D(2021, 4, 1)),
    ({"$dateTrunc": {"date": D(2021, 5, 15), "unit": "quarter"}}, {}, D(2021, 4, 1)),
    ({"$dateTrunc": {"date": D(2021, 1, 1, 2), "unit": "year", "timezone": "+05:00"}}, {},
     D(2020, 12, 31, 19)),
    ({"$dateTrunc": {"date": D(2021, 6, 15, 12), "unit": "year", "timezone": NY}}, {},
     D(2021, 1, 1, 5)),
    ({"$dateTrunc": {"date": D(2021, 1, 1), "unit": "fortnight"}}, {}, Err(5439014)),
    ({"$dateTrunc": {"date": D(2021, 1, 1), "unit": 5}}, {}, Err(5439013)),
    ({"$dateTrunc": {"date": D(2021, 1, 1), "unit": "day", "binSize": 0}}, {}, Err(5439017)),
    ({"$dateTrunc": {"date": D(2021, 1, 1), "unit": "week", "startOfWeek": "funday"}}, {},
     Err(5439016)),
    ({"$dateTrunc": {"date": "x", "unit": "day"}}, {}, Err(5439012)),
    ({"$dateTrunc": {"date": None, "unit": "day"}}, {}, None),
    ({"$dateTrunc": {"unit": "day"}}, {}, Err(5439010)),
    # ---- $dateAdd / $dateSubtract
    ({"$dateAdd": {"startDate": D(2020, 1, 31), "unit": "month", "amount": 1}}, {},
     D(2020, 2, 29)),
    ({"$dateAdd": {"startDate": D(2021, 1, 31), "unit": "month", "amount": 1}}, {},
     D(2021, 2, 28)),
    ({"$dateAdd": {"startDate": D(2020, 2, 29), "unit": "year", "amount": 1}}, {},
     D(2021, 2, 28)),
    ({"$dateAdd": {"startDate": D(2021, 1, 15), "unit": "quarter", "amount": 1}}, {},
     D(2021, 4, 15)),
    ({"$dateAdd": {"startDate": D(2021, 1, 15), "unit": "week", "amount": 2}}, {},
     D(2021, 1, 29)),
    ({"$dateAdd": {"startDate": D(2021, 1, 15), "unit": "millisecond", "amount": 1500}}, {},
     D(2021, 1, 15, 0, 0, 1, 500000)),
    # a day across the spring-forward transition keeps the local time (07:00)
    ({"$dateAdd": {"startDate": D(2020, 3, 7, 12), "unit": "day", "amount": 1,
                   "timezone": NY}}, {}, D(2020, 3, 8, 11)),
    ({"$dateAdd": {"startDate": D(2020, 3, 7, 12), "unit": "hour", "amount": 24,
                   "timezone": NY}}, {}, D(2020, 3, 8, 12)),
    ({"$dateAdd": {"startDate": D(2020, 11, 1, 5, 50, 2), "unit": "hour", "amount": 1,
                   "timezone": NY}}, {}, D(2020, 11, 1, 6, 50, 2)),
    ({"$dateSubtract": {"startDate": D(2021, 3, 31), "unit": "month", "amount": 1}}, {},
     D(2021, 2, 28)),
    ({"$dateSubtract": {"startDate": D(2021, 3, 1), "unit": "day", "amount": Int64(1)}}, {},
     D(2021, 2, 28)),
    ({"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "day", "amount": 1.0}}, {}, D(2021, 1, 2)),
    ({"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "day", "amount": 1.5}}, {}, Err(5166405)),
    ({"$dateAdd": {"startDate": "x", "unit": "day", "amount": 1}}, {}, Err(5166403)),
    ({"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "days", "amount": 1}}, {},
     Err(5439014)),
    ({"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "day", "amount": None}}, {}, None),
    ({"$dateAdd": {"startDate": "$nope", "unit": "day", "amount": 1}}, {}, None),
    ({"$dateAdd": {"startDate": D(2021, 1, 1), "amount": 1}}, {}, Err(5166402)),
    ({"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "day", "amount": 1, "x": 1}}, {},
     Err(5166401)),
    ({"$dateAdd": 5}, {}, Err(5166400)),
    ({"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "year", "amount": Int64(10**12)}}, {},
     Err(5976500)),
    ({"$dateAdd": {"startDate": D(2021, 1, 1), "unit": "year", "amount": 300000000}}, {},
     Err(5166406)),
    # ---- $dateDiff
    ({"$dateDiff": {"startDate": D(2020, 12, 31, 23, 59), "endDate": D(2021, 1, 1, 0, 1),
                    "unit": "year"}}, {}, 1),
    ({"$dateDiff": {"startDate": D(2020, 12, 31, 23, 59), "endDate": D(2021, 1, 1, 0, 1),
                    "unit": "day"}}, {}, 1),
    ({"$dateDiff": {"startDate": D(2020, 12, 31, 23, 59), "endDate": D(2021, 1, 1, 0, 1),
                    "unit": "hour"}}, {}, 1),
    ({"$dateDiff": {"startDate": D(2020, 12, 31, 23, 59), "endDate": D(2021, 1, 1, 0, 1),
                    "unit": "minute"}}, {}, 2),
    ({"$dateDiff": {"startDate": D(2021, 1, 1), "endDate": D(2021, 12, 31), "unit": "year"}},
     {}, 0),
    ({"$dateDiff": {"startDate": D(2021, 1, 2), "endDate": D(2021, 1, 3), "unit": "week"}},
     {}, 1),
    ({"$dateDiff": {"startDate": D(2021, 1, 2), "endDate": D(2021, 1, 3), "unit": "week",
                    "startOfWeek": "monday"}}, {}, 0),
    ({"$dateDiff": {"startDate": D(2021, 3, 31), "endDate": D(2021, 4, 1), "unit": "quarter"}},
     {}, 1),
    ({"$dateDiff": {"startDate": D(2021, 1, 31), "endDate": D(2021, 2, 1), "unit": "month"}},
     {}, 1),
    ({"$dateDiff": {"startDate": D(2021, 1, 2), "endDate": D(2021, 1, 1), "unit": "day"}}, {},
     -1),
    ({"$dateDiff": {"startDate": D(2021, 1, 1), "endDate": D(2021, 1, 1, 0, 0, 1, 500000),
                    "unit": "millisecond"}}, {}, 1500),
    # one elapsed hour across the fall-back transition (01:30 EDT -> 01:30 EST)
    ({"$dateDiff": {"startDate": D(2020, 11, 1, 5, 30), "endDate": D(2020, 11, 1, 6, 30),
                    "unit": "hour", "timezone": NY}}, {}, 1),
    ({"$dateDiff": {"startDate": D(2020, 11, 1, 5, 30), "endDate": D(2020, 11, 1, 6, 30),
                    "unit": "day", "timezone": NY}}, {}, 0),
    ({"$dateDiff": {"startDate": D(2021, 1, 1, 4), "endDate": D(2021, 1, 1, 6), "unit": "day",
                    "timezone": NY}}, {}, 1),
    ({"$dateDiff": {"startDate": D(2021, 1, 1, 4), "endDate": D(2021, 1, 1, 6), "unit": "day"}},
     {}, 0),
    ({"$dateDiff": {"startDate": "x", "endDate": D(2021, 1, 1), "unit": "day"}}, {},
     Err(5166307)),
    ({"$dateDiff": {"startDate": D(2021, 1, 1), "endDate": D(2021, 1, 2), "unit": None}}, {},
     None),
    ({"$dateDiff": {"startDate": D(2021, 1, 1), "unit": "day"}}, {}, Err(5166304)),
    ({"$dateDiff": {"startDate": D(2021, 1, 1), "endDate": D(2021, 1, 2), "unit": "day",
                    "timezone": "Bad/Zone"}}, {}, Err(40485)),
    # ---- $dateFromString
    ({"$dateFromString": {"dateString": "2017-02-08T12:10:40.787", "timezone": NY}}, {},
     D(2017, 2, 8, 17, 10, 40, 787000)),
    ({"$dateFromString": {"dateString": "2017-02-08"}}, {}, D(2017, 2, 8)),
    ({"$dateFromString": {"dateString": "2017-02-08T12:10:40Z"}}, {}, D(2017, 2, 8, 12, 10, 40)),
    ({"$dateFromString": {"dateString": "2017-07-04T11:56:02+01:00"}}, {},
     D(2017, 7, 4, 10, 56, 2)),
    ({"$dateFromString": {"dateString": "15/06/2018", "format": "%d/%m/%Y"}}, {},
     D(2018, 6, 15)),
    ({"$dateFromString": {"dateString": "06-15-2018 08:30", "format": "%m-%d-%Y %H:%M",
                          "timezone": "+02:00"}}, {}, D(2018, 6, 15, 6, 30)),
    ({"$dateFromString": {"dateString": "2018-06-15T12:00:00+0200",
                          "format": "%Y-%m-%dT%H:%M:%S%z"}}, {}, D(2018, 6, 15, 10)),
    ({"$dateFromString": {"dateString": "2021-W01-1", "format": "%G-W%V-%u"}}, {},
     D(2021, 1, 4)),
    ({"$dateFromString": {"dateString": "2021-01-1", "format": "%Y-%U-%w"}}, {}, D(2021, 1, 3)),
    ({"$dateFromString": {"dateString": "2021-02-6", "format": "%Y-%U-%w"}}, {}, D(2021, 1, 15)),
    ({"$dateFromString": {"dateString": "15 jun 2018", "format": "%d %b %Y"}}, {},
     D(2018, 6, 15)),
    ({"$dateFromString": {"dateString": "not a date"}}, {}, Err(241)),
    ({"$dateFromString": {"dateString": "2021-02-30"}}, {}, Err(241)),
    ({"$dateFromString": {"dateString": "not a date", "onError": "bad"}}, {}, "bad"),
    ({"$dateFromString": {"dateString": 5, "onError": "bad"}}, {}, "bad"),
    ({"$dateFromString": {"dateString": None}}, {}, None),
    ({"$dateFromString": {"dateString": "$nope", "onNull": "n"}}, {}, "n"),
    ({"$dateFromString": {"dateString": "2021-01-01", "format": 5}}, {}, Err(40684)),
    ({"$dateFromString": {"format": "%Y"}}, {}, Err(40542)),
    ({"$dateFromString": {"dateString": "2021-01-01", "bogus": 1}}, {}, Err(40541)),
    ({"$dateFromString": {"dateString": "2021-01-01", "timezone": "Bad/Zone"}}, {}, Err(40485)),
    # ---- $dateToParts / $dateFromParts
    ({"$dateToParts": {"date": D(2017, 1, 1, 1, 29, 9, 123000)}}, {},
     {"year": 2017, "month": 1, "day": 1, "hour": 1, "minute": 29, "second": 9,
      "millisecond": 123}),
    ({"$dateToParts": {"date": D(2017, 1, 1, 1, 29, 9, 123000), "timezone": NY}}, {},
     {"year": 2016, "month": 12, "day": 31, "hour": 20, "minute": 29, "second": 9,
      "millisecond": 123}),
    ({"$dateToParts": {"date": D(2017, 1, 1, 1, 29, 9, 123000), "iso8601": True}}, {},
     {"isoWeekYear": 2016, "isoWeek": 52, "isoDayOfWeek": 7, "hour": 1, "minute": 29,
      "second": 9, "millisecond": 123}),
    ({"$dateToParts": {"date": D(2017, 1, 1), "iso8601": "yes"}}, {}, Err(40521)),
    ({"$dateToParts": {"date": None}}, {}, None),
    ({"$dateToParts": {"timezone": NY}}, {}, Err(40522)),
    ({"$dateFromParts": {"year": 2017, "month": 2, "day": 8, "hour": 12, "timezone": NY}}, {},
     D(2017, 2, 8, 17)),
    ({"$dateFromParts": {"isoWeekYear": 2017, "isoWeek": 6, "isoDayOfWeek": 3, "hour": 12}},
     {}, D(2017, 2, 8, 12)),
    ({"$dateFromParts": {"year": 2017, "month": 14, "day": 1}}, {}, D(2018, 2, 1)),
    ({"$dateFromParts": {"year": 2017, "month": 3, "day": 0}}, {}, D(2017, 2, 28)),
    ({"$dateFromParts": {"year": 2020, "month": 7, "day": 1, "timezone": "Europe/London"}}, {},
     D(2020, 6, 30, 23)),
    ({"$dateFromParts": {"year": 2017, "isoWeek": 6}}, {}, Err(40489)),
    ({"$dateFromParts": {"year": 10000}}, {}, Err(40523)),
    ({"$dateFromParts": {"year": 2017, "month": 40000}}, {}, Err(31034)),
    ({"$dateFromParts": {"month": 1}}, {}, Err(40516)),
    ({"$dateFromParts": {"year": 2017, "month": "x"}}, {}, Err(40515)),
    ({"$dateFromParts": {"year": 2017, "timezone": "Bad/Zone"}}, {}, Err(40485)),
    # ---- timestamps
    ({"$tsSecond": Timestamp(1622731060, 10)}, {}, 1622731060),
    ({"$tsIncrement": Timestamp(1622731060, 10)}, {}, 10),
    ({"$tsSecond": None}, {}, None),
    ({"$tsSecond": 5}, {}, Err(5687301)),
    ({"$tsIncrement": "x"}, {}, Err(5687302)),
    # ---- trigonometry
    ({"$sin": 0}, {}, Approx(0.0)),
    ({"$cos": 0}, {}, Approx(1.0)),
    ({"$tan": 0}, {}, Approx(0.0)),
    ({"$asin": 1}, {}, Approx(math.pi / 2)),
    ({"$acos": 1}, {}, Approx(0.0)),
    ({"$atan": 1}, {}, Approx(math.pi / 4)),
    ({"$atan2": [1, 1]}, {}, Approx(math.pi / 4)),
    ({"$atan2": [1, -1]}, {}, Approx(3 * math.pi / 4)),
    ({"$sinh": 0}, {}, Approx(0.0)),
    ({"$cosh": 0}, {}, Approx(1.0)),
    ({"$tanh": 0}, {}, Approx(0.0)),
    ({"$asinh": 0}, {}, Approx(0.0)),
    ({"$acosh": 1}, {}, Approx(0.0)),
    ({"$atanh": 0.5}, {}, Approx(math.atanh(0.5))),
    ({"$degreesToRadians": 180}, {}, Approx(math.pi)),
    ({"$radiansToDegrees": math.pi}, {}, Approx(180.0)),
    ({"$sin": "$nope"}, {}, None),
    ({"$atan2": [None, 1]}, {}, None),
    ({"$asin": 2}, {}, Err(50989)),
    ({"$acos": -1.5}, {}, Err(50989)),
    ({"$acosh": 0.5}, {}, Err(50989)),
    ({"$atanh": 2}, {}, Err(50989)),
    ({"$sin": float("inf")}, {}, Err(50989)),
    ({"$cos": "a"}, {}, Err(28765)),
    ({"$atan2": ["a", 1]}, {}, Err(51044)),
    ({"$sin": [1, 2]}, {}, Err(16020)),
    # ---- set operators
    ({"$setUnion": [[1, 2], [2, 3]]}, {}, SetOf(1, 2, 3)),
    ({"$setUnion": [[1, 1.0], []]}, {}, [1]),
    ({"$setUnion": [[1], None]}, {}, None),
    ({"$setUnion": [[1], "a"]}, {}, Err(17043)),
    ({"$setIntersection": [[1, 2, 3], [2, 3, 4]]}, {}, SetOf(2, 3)),
    ({"$setIntersection": [[1, 2], []]}, {}, []),
    ({"$setIntersection": [[1], "$nope"]}, {}, None),
    ({"$setIntersection": [[1], 5]}, {}, Err(17047)),
    ({"$setDifference": [[1, 2, 3], [2]]}, {}, SetOf(1, 3)),
    ({"$setDifference": [None, [2]]}, {}, None),
    ({"$setDifference": ["a", [2]]}, {}, Err(17048)),
    ({"$setDifference": [[1], "a"]}, {}, Err(17049)),
    ({"$setEquals": [[1, 2], [2, 1, 1]]}, {}, True),
    ({"$setEquals": [[1], [1, 2]]}, {}, False),
    ({"$setEquals": [[1], None]}, {}, Err(17044)),
    ({"$setEquals": [[1]]}, {}, Err(17045)),
    ({"$setIsSubset": [[1], [1, 2]]}, {}, True),
    ({"$setIsSubset": [[3], [1, 2]]}, {}, False),
    ({"$setIsSubset": [[], []]}, {}, True),
    ({"$setIsSubset": ["a", [1]]}, {}, Err(17310)),
    ({"$setIsSubset": [[1], "a"]}, {}, Err(17311)),
    ({"$allElementsTrue": [[1, True, "a"]]}, {}, True),
    ({"$allElementsTrue": [[1, 0]]}, {}, False),
    ({"$allElementsTrue": [[]]}, {}, True),
    ({"$allElementsTrue": [[None]]}, {}, False),
    ({"$allElementsTrue": "a"}, {}, Err(17040)),
    ({"$anyElementTrue": [[0, False, None]]}, {}, False),
    ({"$anyElementTrue": [[0, 1]]}, {}, True),
    ({"$anyElementTrue": [[]]}, {}, False),
    ({"$anyElementTrue": [5]}, {}, Err(17041)),
    # ---- regex
    ({"$regexMatch": {"input": "Hello", "regex": "^h", "options": "i"}}, {}, True),
    ({"$regexMatch": {"input": "Hello", "regex": "^h"}}, {}, False),
    ({"$regexMatch": {"input": "Hello", "regex": Regex("^h", "i")}}, {}, True),
    ({"$regexMatch": {"input": "a\nb", "regex": "^b", "options": "m"}}, {}, True),
    ({"$regexMatch": {"input": "$nope", "regex": "a"}}, {}, False),
    ({"$regexMatch": {"input": "$s", "regex": "$re"}}, {"s": "cat", "re": "a"}, True),
    ({"$regexFind": {"input": "abc123def", "regex": "([0-9]+)"}}, {},
     {"match": "123", "idx": 3, "captures": ["123"]}),
    ({"$regexFind": {"input": "ac", "regex": "a(b)?c"}}, {},
     {"match": "ac", "idx": 0, "captures": [None]}),
    ({"$regexFind": {"input": "é1", "regex": "1"}}, {}, {"match": "1", "idx": 1, "captures": []}),
    ({"$regexFind": {"input": "abc", "regex": "z"}}, {}, None),
    ({"$regexFind": {"input": None, "regex": "z"}}, {}, None),
    ({"$regexFindAll": {"input": "a1b22", "regex": "[0-9]+"}}, {},
     [{"match": "1", "idx": 1, "captures": []}, {"match": "22", "idx": 3, "captures": []}]),
    ({"$regexFindAll": {"input": "abc", "regex": "z"}}, {}, []),
    ({"$regexFindAll": {"input": "$nope", "regex": "z"}}, {}, []),
    ({"$regexMatch": {"input": 5, "regex": "a"}}, {}, Err(51104)),
    ({"$regexMatch": {"input": "a", "regex": 5}}, {}, Err(51105)),
    ({"$regexMatch": {"input": "a", "regex": "a", "options": 5}}, {}, Err(51106)),
    ({"$regexMatch": {"input": "a", "regex": Regex("a", "i"), "options": "m"}}, {}, Err(51107)),
    ({"$regexMatch": {"input": "a", "regex": "a", "options": "z"}}, {}, Err(51108)),
    ({"$regexMatch": {"input": "a", "regex": "("}}, {}, Err(51111)),
    ({"$regexMatch": {"input": "a"}}, {}, Err(31023)),
    ({"$regexMatch": {"regex": "a"}}, {}, Err(31022)),
    ({"$regexMatch": {"input": "a", "regex": "a", "flags": "i"}}, {}, Err(31024)),
    ({"$regexMatch": "a"}, {}, Err(51103)),
    # ---- strings
    ({"$replaceOne": {"input": "a-b-c", "find": "-", "replacement": "+"}}, {}, "a+b-c"),
    ({"$replaceAll": {"input": "a-b-c", "find": "-", "replacement": "+"}}, {}, "a+b+c"),
    ({"$replaceAll": {"input": "aaa", "find": "aa", "replacement": "b"}}, {}, "ba"),
    ({"$replaceOne": {"input": "abc", "find": "x", "replacement": "y"}}, {}, "abc"),
    ({"$replaceAll": {"input": None, "find": "a", "replacement": "b"}}, {}, None),
    ({"$replaceAll": {"input": "a", "find": "$nope", "replacement": "b"}}, {}, None),
    ({"$replaceOne": {"input": 5, "find": "a", "replacement": "b"}}, {}, Err(51746)),
    ({"$replaceOne": {"input": "a", "find": 5, "replacement": "b"}}, {}, Err(51745)),
    ({"$replaceOne": {"input": "a", "find": "a", "replacement": 5}}, {}, Err(51744)),
    ({"$replaceOne": {"input": None, "find": 5, "replacement": "b"}}, {}, Err(51745)),
    ({"$replaceOne": {"input": "a", "replacement": "b"}}, {}, Err(51748)),
    ({"$replaceAll": {"input": "a", "find": "a", "replacement": "b", "x": 1}}, {}, Err(51750)),
    ({"$indexOfBytes": ["cafétéria", "é"]}, {}, 3),
    ({"$indexOfBytes": ["cafétéria", "t"]}, {}, 5),
    ({"$indexOfBytes": ["abc", "c", 0, 2]}, {}, -1),
    ({"$indexOfBytes": ["abcabc", "b", 2]}, {}, 4),
    ({"$indexOfBytes": ["abc", "b", 5]}, {}, -1),
    ({"$indexOfBytes": [None, "a"]}, {}, None),
    ({"$indexOfBytes": ["abc", "b", -1]}, {}, Err(40097)),
    ({"$indexOfBytes": ["abc", "b", 1.5]}, {}, Err(40096)),
    ({"$indexOfBytes": [5, "a"]}, {}, Err(40091)),
    ({"$indexOfBytes": ["a", 5]}, {}, Err(40092)),
    # ---- arrays
    ({"$sortArray": {"input": [3, 1, 2], "sortBy": 1}}, {}, [1, 2, 3]),
    ({"$sortArray": {"input": [3, 1, 2], "sortBy": -1}}, {}, [3, 2, 1]),
    ({"$sortArray": {"input": [1, "a", None], "sortBy": 1}}, {}, [None, 1, "a"]),
    ({"$sortArray": {"input": [{"a": 2, "b": 1}, {"a": 1, "b": 2}], "sortBy": {"a": 1}}}, {},
     [{"a": 1, "b": 2}, {"a": 2, "b": 1}]),
    ({"$sortArray": {"input": [{"a": 1, "b": 1}, {"a": 1, "b": 2}], "sortBy": {"a": 1, "b": -1}}},
     {}, [{"a": 1, "b": 2}, {"a": 1, "b": 1}]),
    ({"$sortArray": {"input": None, "sortBy": 1}}, {}, None),
    ({"$sortArray": {"input": 5, "sortBy": 1}}, {}, Err(2942504)),
    ({"$sortArray": {"input": [1], "sortBy": 0}}, {}, Err(2942506)),
    ({"$sortArray": {"input": [1]}}, {}, Err(2942503)),
    ({"$sortArray": {"sortBy": 1}}, {}, Err(2942502)),
    ({"$sortArray": {"input": [1], "sortBy": 1, "x": 1}}, {}, Err(2942501)),
    ({"$sortArray": [1]}, {}, Err(2942500)),
    ({"$zip": {"inputs": [[1, 2], [3]]}}, {}, [[1, 3]]),
    ({"$zip": {"inputs": [[1, 2], [3]], "useLongestLength": True}}, {}, [[1, 3], [2, None]]),
    ({"$zip": {"inputs": [[1, 2], [3]], "useLongestLength": True, "defaults": ["x", "y"]}}, {},
     [[1, 3], [2, "y"]]),
    ({"$zip": {"inputs": ["$a", "$b"]}}, {"a": ["x", "y"], "b": [1, 2]}, [["x", 1], ["y", 2]]),
    ({"$zip": {"inputs": [[1], "$nope"]}}, {}, None),
    ({"$zip": {"inputs": [[1], "a"]}}, {}, Err(34468)),
    ({"$zip": {"inputs": [[1]], "defaults": [0]}}, {}, Err(34466)),
    ({"$zip": {"inputs": []}}, {}, Err(34465)),
    ({"$zip": {"inputs": [[1]], "x": 1}}, {}, Err(34464)),
    ({"$firstN": {"n": 2, "input": [1, 2, 3]}}, {}, [1, 2]),
    ({"$firstN": {"n": 5, "input": [1, 2, 3]}}, {}, [1, 2, 3]),
    ({"$lastN": {"n": 2, "input": [1, 2, 3]}}, {}, [2, 3]),
    ({"$maxN": {"n": 2, "input": [3, None, 1, 5]}}, {}, [5, 3]),
    ({"$minN": {"n": 2, "input": [3, None, 1, 5]}}, {}, [1, 3]),
    ({"$firstN": {"n": 0, "input": [1]}}, {}, Err(5787908)),
    ({"$firstN": {"n": 1.5, "input": [1]}}, {}, Err(5787903)),
    ({"$lastN": {"n": "a", "input": [1]}}, {}, Err(5787902)),
    ({"$maxN": {"n": 1, "input": "x"}}, {}, Err(5788200)),
    ({"$minN": {"input": [1]}}, {}, Err(5787906)),
    ({"$minN": {"n": 1}}, {}, Err(5787907)),
    ({"$firstN": {"n": 1, "input": [1], "x": 1}}, {}, Err(5787901)),
    ({"$arrayElemAt": [[1, 2, 3], -1]}, {}, 3),
    ({"$arrayElemAt": [[1, 2, 3], -4]}, {}, MISSING),
    ({"$median": {"input": [3, 1, 2, "x"], "method": "approximate"}}, {}, 2.0),
    ({"$percentile": {"input": "$scores", "p": [0.5, 0.95], "method": "approximate"}},
     {"scores": [58, 60, 62, 79, 83]}, [62.0, 83.0]),
    # ---- objects
    ({"$setField": {"field": "b", "input": {"a": 1}, "value": 2}}, {}, {"a": 1, "b": 2}),
    ({"$setField": {"field": "a", "input": {"a": 1, "c": 3}, "value": 2}}, {}, {"a": 2, "c": 3}),
    ({"$setField": {"field": "a", "input": "$$ROOT", "value": "$$REMOVE"}}, {"a": 1, "b": 2},
     {"b": 2}),
    ({"$setField": {"field": "a.b", "input": {}, "value": 1}}, {}, {"a.b": 1}),
    ({"$unsetField": {"field": "a", "input": {"a": 1, "b": 2}}}, {}, {"b": 2}),
    ({"$unsetField": {"field": "z", "input": {"a": 1}}}, {}, {"a": 1}),
    ({"$setField": {"field": "a", "input": None, "value": 1}}, {}, None),
    ({"$setField": {"field": "a", "input": 5, "value": 1}}, {}, Err(4161105)),
    ({"$setField": {"field": {"$literal": "$p"}, "input": {}, "value": 1}}, {}, {"$p": 1}),
    # $const is MongoDB's alias of $literal: its argument is not evaluated.
    ({"$const": "$p"}, {"p": 5}, "$p"),
    ({"$const": {"$add": [1, 2]}}, {}, {"$add": [1, 2]}),
    ({"$add": [{"$const": 2}, "$p"]}, {"p": 5}, 7),
    ({"$getField": {"field": {"$const": "$p"}, "input": {"$setField": {
        "field": {"$literal": "$p"}, "input": {}, "value": 3}}}}, {}, 3),
    ({"$setField": {"field": "$f", "input": {}, "value": 1}}, {"f": "x"}, Err(4161108)),
    ({"$setField": {"field": {"$concat": ["a", "b"]}, "input": {}, "value": 1}}, {},
     Err(4161106)),
    ({"$setField": {"field": 5, "input": {}, "value": 1}}, {}, Err(4161107)),
    ({"$setField": {"field": "a", "input": {}}}, {}, Err(4161103)),
    ({"$setField": {"field": "a", "value": 1}}, {}, Err(4161109)),
    ({"$unsetField": {"field": "a", "input": {}, "value": 1}}, {}, Err(4161101)),
    # ---- misc
    ({"$binarySize": "abc"}, {}, 3),
    ({"$binarySize": "é"}, {}, 2),
    ({"$binarySize": Binary(b"\x00\x01\x02")}, {}, 3),
    ({"$binarySize": None}, {}, None),
    ({"$binarySize": 5}, {}, Err(5155800)),
    ({"$bsonSize": {"a": 1}}, {}, 12),
    ({"$bsonSize": "$$ROOT"}, {}, 5),
    ({"$bsonSize": "$nope"}, {}, None),
    ({"$bsonSize": 5}, {}, Err(31393)),
    ({"$rand": {"a": 1}}, {}, Err(3040501)),
    ({"$noSuchOperator": 1}, {}, Err(168)),
]


def _evaluate(db, expr, doc):
    pipeline = [{"$documents": [doc]}, {"$project": {"_id": 0, "r": expr}}]
    out = list(db.aggregate(pipeline))
    assert len(out) == 1
    return out[0].get("r", MISSING)


@pytest.mark.parametrize("expr,doc,expected", CASES,
                         ids=[f"{i}-{next(iter(c[0]))}" for i, c in enumerate(CASES)])
def test_expression(db, expr, doc, expected):
    if isinstance(expected, Err):
        with pytest.raises(OperationFailure) as e:
            _evaluate(db, expr, doc)
        assert e.value.code == expected.code, e.value.details
        return
    assert _evaluate(db, expr, doc) == expected


def test_rand_is_in_unit_interval(db):
    values = [_evaluate(db, {"$rand": {}}, {}) for _ in range(20)]
    assert all(isinstance(v, float) and 0 <= v < 1 for v in values)
    assert len(set(values)) > 1


# ---- accumulators through $group

GROUP_DOCS = [
    {"g": 1, "s": 10, "v": "a"},
    {"g": 1, "s": 30, "v": "b"},
    {"g": 1, "s": 20, "v": "c"},
    {"g": 2, "s": 5, "v": "d"},
    {"g": 2, "v": "e"},
]

GROUP_CASES = [
    ({"$top": {"sortBy": {"s": -1}, "output": "$v"}}, {1: "b", 2: "d"}),
    ({"$bottom": {"sortBy": {"s": -1}, "output": "$v"}}, {1: "a", 2: "e"}),  # missing s sorts low
    ({"$topN": {"n": 2, "sortBy": {"s": 1}, "output": ["$v", "$s"]}},
     {1: [["a", 10], ["c", 20]], 2: [["e", None], ["d", 5]]}),
    ({"$bottomN": {"n": 2, "sortBy": {"s": 1}, "output": "$v"}}, {1: ["c", "b"], 2: ["e", "d"]}),
    ({"$topN": {"n": 1, "sortBy": {"s": 1}, "output": "$s"}}, {1: [10], 2: [None]}),
    ({"$firstN": {"n": 2, "input": "$v"}}, {1: ["a", "b"], 2: ["d", "e"]}),
    ({"$lastN": {"n": 2, "input": "$s"}}, {1: [30, 20], 2: [5, None]}),
    ({"$minN": {"n": 2, "input": "$s"}}, {1: [10, 20], 2: [5]}),
    ({"$maxN": {"n": 2, "input": "$s"}}, {1: [30, 20], 2: [5]}),
    ({"$median": {"input": "$s", "method": "approximate"}}, {1: 20.0, 2: 5.0}),
    ({"$percentile": {"input": "$s", "p": [0.1, 0.5, 1.0], "method": "approximate"}},
     {1: [10.0, 20.0, 30.0], 2: [5.0, 5.0, 5.0]}),
    ({"$median": {"input": "$v", "method": "approximate"}}, {1: None, 2: None}),
]


def _group(db, acc):
    pipeline = [{"$documents": GROUP_DOCS}, {"$group": {"_id": "$g", "r": acc}},
                {"$sort": {"_id": 1}}]
    return {d["_id"]: d["r"] for d in db.aggregate(pipeline)}


@pytest.mark.parametrize("acc,expected", GROUP_CASES,
                         ids=[f"{i}-{next(iter(c[0]))}" for i, c in enumerate(GROUP_CASES)])
def test_group_accumulator(db, acc, expected):
    assert _group(db, acc) == expected


GROUP_ERRORS = [
    ({"$topN": {"sortBy": {"s": 1}, "output": "$v"}}, 5788003),
    ({"$topN": {"n": 1, "output": "$v"}}, 5788005),
    ({"$topN": {"n": 1, "sortBy": {"s": 1}}}, 5788004),
    ({"$top": {"n": 1, "sortBy": {"s": 1}, "output": "$v"}}, 5788002),
    ({"$topN": {"n": 0, "sortBy": {"s": 1}, "output": "$v"}}, 5787908),
    ({"$topN": {"n": 2.5, "sortBy": {"s": 1}, "output": "$v"}}, 5787903),
    ({"$topN": {"n": 1, "sortBy": {"s": 2}, "output": "$v"}}, 15975),
    ({"$topN": 5}, 5788001),
    ({"$firstN": {"n": -1, "input": "$v"}}, 5787908),
    ({"$firstN": {"input": "$v"}}, 5787906),
    ({"$maxN": {"n": 1}}, 5787907),
    ({"$minN": [1]}, 5787900),
    ({"$lastN": [1]}, 5787801),
    ({"$percentile": {"input": "$s", "p": [1.5], "method": "approximate"}}, 7750303),
    ({"$percentile": {"input": "$s", "p": ["a"], "method": "approximate"}}, 7750302),
    ({"$percentile": {"input": "$s", "p": [], "method": "approximate"}}, 7750301),
    ({"$percentile": {"input": "$s", "p": "$s", "method": "approximate"}}, 7750300),
    ({"$percentile": {"input": "$s", "method": "approximate"}}, 40414),
    ({"$median": {"input": "$s"}}, 40414),
    ({"$median": {"input": "$s", "method": "exact"}}, 2),
    ({"$median": {"input": "$s", "p": [0.5], "method": "approximate"}}, 40415),
    ({"$noSuchAccumulator": 1}, 15952),
]


@pytest.mark.parametrize("acc,code", GROUP_ERRORS,
                         ids=[f"{i}-{next(iter(c[0]))}" for i, c in enumerate(GROUP_ERRORS)])
def test_group_accumulator_errors(db, acc, code):
    with pytest.raises(OperationFailure) as e:
        _group(db, acc)
    assert e.value.code == code, e.value.details


def test_group_n_computed_from_the_group_key(db):
    """n may depend on the group key: it is evaluated with the _id document as the root."""
    n = {"$cond": {"if": {"$eq": ["$g", 1]}, "then": 1, "else": 3}}
    pipeline = [{"$documents": GROUP_DOCS},
                {"$group": {"_id": {"g": "$g"},
                            "first": {"$firstN": {"input": "$v", "n": n}},
                            "top": {"$topN": {"output": "$v", "n": n, "sortBy": {"v": -1}}}}},
                {"$sort": {"_id.g": 1}}]
    assert list(db.aggregate(pipeline)) == [
        {"_id": {"g": 1}, "first": ["a"], "top": ["c"]},
        {"_id": {"g": 2}, "first": ["d", "e"], "top": ["e", "d"]},
    ]
    by_g = [{"$documents": GROUP_DOCS},
            {"$group": {"_id": {"g": "$g"}, "x": {"$lastN": {"input": "$v", "n": "$g"}}}},
            {"$sort": {"_id.g": 1}}]
    assert [d["x"] for d in db.aggregate(by_g)] == [["c"], ["d", "e"]]
    zero = [{"$documents": GROUP_DOCS},
            {"$group": {"_id": {"g": "$g"},
                        "x": {"$firstN": {"input": "$v", "n": {"$subtract": ["$g", 1]}}}}}]
    with pytest.raises(OperationFailure) as e:
        list(db.aggregate(zero))
    assert e.value.code == 5787908


def test_group_top_over_a_collection(db):
    """$top/$bottom in $group over a stored collection, with ties kept in input order."""
    coll = db.scores
    coll.insert_many([
        {"game": "G1", "player": "p1", "score": 31},
        {"game": "G1", "player": "p2", "score": 33},
        {"game": "G1", "player": "p3", "score": 99},
        {"game": "G1", "player": "p4", "score": 1},
        {"game": "G2", "player": "p1", "score": 10},
        {"game": "G2", "player": "p2", "score": 14},
    ])
    out = list(coll.aggregate([
        {"$group": {"_id": "$game",
                    "best": {"$top": {"output": ["$player", "$score"], "sortBy": {"score": -1}}},
                    "three": {"$topN": {"n": 3, "output": "$player",
                                        "sortBy": {"score": -1}}}}},
        {"$sort": {"_id": 1}},
    ]))
    assert out == [
        {"_id": "G1", "best": ["p3", 99], "three": ["p3", "p2", "p1"]},
        {"_id": "G2", "best": ["p2", 14], "three": ["p2", "p1"]},
    ]

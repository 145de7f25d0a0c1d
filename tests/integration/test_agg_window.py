"""$setWindowFields, $densify and $fill through pymongo (MongoDB 7.0 semantics).

Each case is declarative: input documents, a pipeline, and either the expected
output (in order) or the expected error code.  Expected values come from
MongoDB's manual (its examples are reused where they exist) and its documented
semantics.  Outputs are compared without `_id` unless the expected documents
name it.  Cases marked `ts` run against a time-series collection
(timeField "t", metaField "m").
"""

from dataclasses import dataclass, field
from datetime import datetime

import pytest
from pymongo.errors import OperationFailure


def D(s):
    """A naive UTC datetime, as pymongo returns them."""
    return datetime.fromisoformat(s)


approx = pytest.approx


@dataclass
class Case:
    name: str
    docs: list
    pipeline: list
    expected: list = None
    error: int = None
    ts: bool = False
    unordered: bool = False  # compare as sorted lists (sort key: repr)
    keys: list = field(default=None)  # expected key order of each output document


CAKES = [
    {"_id": 0, "type": "chocolate", "orderDate": D("2020-05-18T14:10:30"), "state": "CA",
     "price": 13, "quantity": 120},
    {"_id": 1, "type": "chocolate", "orderDate": D("2021-03-20T11:30:05"), "state": "WA",
     "price": 14, "quantity": 140},
    {"_id": 2, "type": "vanilla", "orderDate": D("2021-01-11T06:31:15"), "state": "CA",
     "price": 12, "quantity": 145},
    {"_id": 3, "type": "vanilla", "orderDate": D("2020-02-08T13:13:23"), "state": "WA",
     "price": 13, "quantity": 104},
    {"_id": 4, "type": "strawberry", "orderDate": D("2019-05-18T16:09:01"), "state": "CA",
     "price": 41, "quantity": 162},
    {"_id": 5, "type": "strawberry", "orderDate": D("2019-01-08T06:12:03"), "state": "WA",
     "price": 4, "quantity": 103},
]

# v by t, inserted out of order.
SERIES = [
    {"_id": 3, "t": 3, "v": 8},
    {"_id": 1, "t": 1, "v": 5},
    {"_id": 5, "t": 5, "v": 6},
    {"_id": 2, "t": 2, "v": 3},
    {"_id": 4, "t": 4, "v": 1},
]


def swf(output, sort_by=None, partition_by=None):
    spec = {}
    if partition_by is not None:
        spec["partitionBy"] = partition_by
    if sort_by is not None:
        spec["sortBy"] = sort_by
    spec["output"] = output
    return {"$setWindowFields": spec}


def by_t(output, fields):
    """$setWindowFields sorted by t, keeping only t and `fields`."""
    proj = {"_id": 0, "t": 1}
    proj.update({f: 1 for f in fields})
    return [swf(output, sort_by={"t": 1}), {"$project": proj}]


def col(name, values):
    return [{"t": t, name: v} for t, v in zip(range(1, len(values) + 1), values)]


TRUCKS = [
    {"truckID": "1", "timeStamp": D("2020-05-18T14:10:30"), "miles": 1295.1},
    {"truckID": "1", "timeStamp": D("2020-05-18T14:11:00"), "miles": 1295.63},
    {"truckID": "1", "timeStamp": D("2020-05-18T14:11:30"), "miles": 1296.25},
    {"truckID": "1", "timeStamp": D("2020-05-18T14:12:00"), "miles": 1298.9},
    {"truckID": "2", "timeStamp": D("2020-05-18T14:10:30"), "miles": 10234.1},
    {"truckID": "2", "timeStamp": D("2020-05-18T14:11:00"), "miles": 10234.33},
    {"truckID": "2", "timeStamp": D("2020-05-18T14:11:30"), "miles": 10234.73},
    {"truckID": "2", "timeStamp": D("2020-05-18T14:12:00"), "miles": 10235.13},
]

POWER = [
    {"powerMeterID": "1", "timeStamp": D("2020-05-18T14:10:30"), "kilowatts": 2.95},
    {"powerMeterID": "1", "timeStamp": D("2020-05-18T14:11:00"), "kilowatts": 2.7},
    {"powerMeterID": "1", "timeStamp": D("2020-05-18T14:11:30"), "kilowatts": 2.6},
    {"powerMeterID": "1", "timeStamp": D("2020-05-18T14:12:00"), "kilowatts": 2.98},
    {"powerMeterID": "2", "timeStamp": D("2020-05-18T14:10:30"), "kilowatts": 2.5},
    {"powerMeterID": "2", "timeStamp": D("2020-05-18T14:11:00"), "kilowatts": 2.25},
    {"powerMeterID": "2", "timeStamp": D("2020-05-18T14:11:30"), "kilowatts": 2.75},
    {"powerMeterID": "2", "timeStamp": D("2020-05-18T14:12:00"), "kilowatts": 2.82},
]

REVIEWS = [
    {"date": D("2021-03-08"), "score": 90},
    {"date": D("2021-03-09"), "score": 92},
    {"date": D("2021-03-10")},
    {"date": D("2021-03-11")},
    {"date": D("2021-03-12"), "score": 85},
    {"date": D("2021-03-13")},
]

STOCK = [
    {"time": D("2021-03-08T09:00:00"), "price": 500},
    {"time": D("2021-03-08T10:00:00")},
    {"time": D("2021-03-08T11:00:00"), "price": 515},
    {"time": D("2021-03-08T12:00:00")},
    {"time": D("2021-03-08T13:00:00")},
    {"time": D("2021-03-08T14:00:00"), "price": 485},
]

WEATHER = [
    {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": D("2021-05-18T00:00:00"),
     "temp": 12},
    {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": D("2021-05-18T04:00:00"),
     "temp": 11},
    {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": D("2021-05-18T08:00:00"),
     "temp": 11},
    {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": D("2021-05-18T12:00:00"),
     "temp": 12},
]

CASES = [
    # ---- accumulator-style functions, document windows ----
    Case("manual_cumulative_quantity_by_state", CAKES,
         [swf({"c": {"$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}}},
              sort_by={"orderDate": 1}, partition_by="$state"),
          {"$project": {"_id": 1, "state": 1, "c": 1}}],
         [{"_id": 4, "state": "CA", "c": 162}, {"_id": 0, "state": "CA", "c": 282},
          {"_id": 2, "state": "CA", "c": 427}, {"_id": 5, "state": "WA", "c": 103},
          {"_id": 3, "state": "WA", "c": 207}, {"_id": 1, "state": "WA", "c": 347}]),
    Case("manual_cumulative_quantity_by_year", CAKES,
         [swf({"c": {"$sum": "$quantity", "window": {"documents": ["unbounded", "current"]}}},
              sort_by={"orderDate": 1}, partition_by={"$year": "$orderDate"}),
          {"$project": {"_id": 1, "c": 1}}],
         [{"_id": 5, "c": 103}, {"_id": 4, "c": 265}, {"_id": 3, "c": 104},
          {"_id": 0, "c": 224}, {"_id": 2, "c": 145}, {"_id": 1, "c": 285}]),
    Case("manual_moving_average_by_year", CAKES,
         [swf({"a": {"$avg": "$quantity", "window": {"documents": [-1, 0]}}},
              sort_by={"orderDate": 1}, partition_by={"$year": "$orderDate"}),
          {"$project": {"_id": 1, "a": 1}}],
         [{"_id": 5, "a": 103}, {"_id": 4, "a": 132.5}, {"_id": 3, "a": 104},
          {"_id": 0, "a": 112}, {"_id": 2, "a": 145}, {"_id": 1, "a": 142.5}]),
    Case("manual_push_range_months", CAKES,
         [swf({"r": {"$push": "$orderDate",
                     "window": {"range": ["unbounded", 10], "unit": "month"}}},
              sort_by={"orderDate": 1}, partition_by="$state"),
          {"$project": {"_id": 1, "r": 1}}],
         [{"_id": 4, "r": [D("2019-05-18T16:09:01")]},
          {"_id": 0, "r": [D("2019-05-18T16:09:01"), D("2020-05-18T14:10:30"),
                           D("2021-01-11T06:31:15")]},
          {"_id": 2, "r": [D("2019-05-18T16:09:01"), D("2020-05-18T14:10:30"),
                           D("2021-01-11T06:31:15")]},
          {"_id": 5, "r": [D("2019-01-08T06:12:03")]},
          {"_id": 3, "r": [D("2019-01-08T06:12:03"), D("2020-02-08T13:13:23")]},
          {"_id": 1, "r": [D("2019-01-08T06:12:03"), D("2020-02-08T13:13:23"),
                           D("2021-03-20T11:30:05")]}]),
    Case("sum_sliding", SERIES, by_t({"s": {"$sum": "$v", "window": {"documents": [-1, 1]}}}, ["s"]),
         col("s", [8, 16, 12, 15, 7])),
    Case("min_max_sliding", SERIES,
         by_t({"lo": {"$min": "$v", "window": {"documents": [-1, 1]}},
               "hi": {"$max": "$v", "window": {"documents": [-1, 1]}}}, ["lo", "hi"]),
         [{"t": 1, "lo": 3, "hi": 5}, {"t": 2, "lo": 3, "hi": 8}, {"t": 3, "lo": 1, "hi": 8},
          {"t": 4, "lo": 1, "hi": 8}, {"t": 5, "lo": 1, "hi": 6}]),
    Case("avg_running", SERIES,
         by_t({"a": {"$avg": "$v", "window": {"documents": ["unbounded", "current"]}}}, ["a"]),
         col("a", [5, 4, approx(16 / 3), 4.25, 4.6])),
    Case("count_to_end", SERIES,
         by_t({"n": {"$count": {}, "window": {"documents": ["current", "unbounded"]}}}, ["n"]),
         col("n", [5, 4, 3, 2, 1])),
    Case("count_default_window_is_partition", SERIES, by_t({"n": {"$count": {}}}, ["n"]),
         col("n", [5, 5, 5, 5, 5])),
    Case("first_last", SERIES,
         by_t({"f": {"$first": "$v", "window": {"documents": [-2, 0]}},
               "l": {"$last": "$v", "window": {"documents": [-2, 0]}}}, ["f", "l"]),
         [{"t": 1, "f": 5, "l": 5}, {"t": 2, "f": 5, "l": 3}, {"t": 3, "f": 5, "l": 8},
          {"t": 4, "f": 3, "l": 1}, {"t": 5, "f": 8, "l": 6}]),
    Case("push_window", SERIES,
         by_t({"p": {"$push": "$v", "window": {"documents": [-1, 0]}}}, ["p"]),
         col("p", [[5], [5, 3], [3, 8], [8, 1], [1, 6]])),
    Case("add_to_set_dedups", [{"t": 1, "v": "x"}, {"t": 2, "v": "x"}, {"t": 3, "v": "x"}],
         by_t({"s": {"$addToSet": "$v"}}, ["s"]), col("s", [["x"], ["x"], ["x"]])),
    Case("std_dev_pop_samp", SERIES,
         [swf({"p": {"$stdDevPop": "$v"}, "s": {"$stdDevSamp": "$v"}}), {"$limit": 1},
          {"$project": {"_id": 0, "p": 1, "s": 1}}],
         [{"p": approx(5.84 ** 0.5), "s": approx(7.3 ** 0.5)}]),
    Case("empty_windows", SERIES,
         by_t({"s": {"$sum": "$v", "window": {"documents": [2, 3]}},
               "a": {"$avg": "$v", "window": {"documents": [2, 3]}},
               "p": {"$push": "$v", "window": {"documents": [2, 3]}},
               "m": {"$max": "$v", "window": {"documents": [2, 3]}}}, ["s", "a", "p", "m"]),
         [{"t": 1, "s": 9, "a": 4.5, "p": [8, 1], "m": 8},
          {"t": 2, "s": 7, "a": 3.5, "p": [1, 6], "m": 6},
          {"t": 3, "s": 6, "a": 6, "p": [6], "m": 6},
          {"t": 4, "s": 0, "a": None, "p": [], "m": None},
          {"t": 5, "s": 0, "a": None, "p": [], "m": None}]),
    Case("non_numeric_and_missing_ignored_by_sum_avg",
         [{"t": 1, "v": 2}, {"t": 2, "v": "x"}, {"t": 3}, {"t": 4, "v": None}, {"t": 5, "v": 4}],
         by_t({"s": {"$sum": "$v"}, "a": {"$avg": "$v"}, "n": {"$count": {}}}, ["s", "a", "n"]),
         [{"t": t, "s": 6, "a": 3, "n": 5} for t in range(1, 6)]),
    Case("expression_input",
         SERIES, by_t({"s": {"$sum": {"$multiply": ["$v", 10]},
                             "window": {"documents": [0, 1]}}}, ["s"]),
         col("s", [80, 110, 90, 70, 60])),
    # ---- range windows ----
    Case("range_numeric_gaps",
         [{"t": 1, "v": 1}, {"t": 2, "v": 2}, {"t": 4, "v": 4}, {"t": 7, "v": 8}, {"t": 8, "v": 16}],
         by_t({"a": {"$sum": "$v", "window": {"range": [-2, 0]}},
               "b": {"$sum": "$v", "window": {"range": [-1, 1]}}}, ["a", "b"]),
         [{"t": 1, "a": 1, "b": 3}, {"t": 2, "a": 3, "b": 3}, {"t": 4, "a": 6, "b": 4},
          {"t": 7, "a": 8, "b": 24}, {"t": 8, "a": 24, "b": 24}]),
    Case("range_current_includes_ties", [{"t": 1, "v": 1}, {"t": 1, "v": 2}, {"t": 2, "v": 4}],
         [swf({"r": {"$sum": "$v", "window": {"range": ["unbounded", "current"]}},
               "d": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}}},
              sort_by={"t": 1}),
          {"$project": {"_id": 0, "v": 1, "r": 1, "d": 1}}],
         [{"v": 1, "r": 3, "d": 1}, {"v": 2, "r": 3, "d": 3}, {"v": 4, "r": 7, "d": 7}]),
    Case("range_fractional_bounds", [{"t": 1.0, "v": 1}, {"t": 1.4, "v": 2}, {"t": 2.0, "v": 4}],
         by_t({"s": {"$sum": "$v", "window": {"range": [-0.5, 0.5]}}}, ["s"]),
         [{"t": 1.0, "s": 3}, {"t": 1.4, "s": 3}, {"t": 2.0, "s": 4}]),
    Case("range_dates_days",
         [{"t": D("2021-01-01T00:00:00"), "v": 1}, {"t": D("2021-01-02T12:00:00"), "v": 2},
          {"t": D("2021-01-05T00:00:00"), "v": 4}],
         by_t({"s": {"$sum": "$v", "window": {"range": [-2, 0], "unit": "day"}}}, ["s"]),
         [{"t": D("2021-01-01T00:00:00"), "s": 1}, {"t": D("2021-01-02T12:00:00"), "s": 3},
          {"t": D("2021-01-05T00:00:00"), "s": 4}]),
    Case("range_dates_seconds_both_sides",
         [{"t": D("2021-01-01T00:00:00"), "v": 1}, {"t": D("2021-01-01T00:00:20"), "v": 2},
          {"t": D("2021-01-01T00:01:00"), "v": 4}],
         by_t({"s": {"$sum": "$v", "window": {"range": [-30, 30], "unit": "second"}}}, ["s"]),
         [{"t": D("2021-01-01T00:00:00"), "s": 3}, {"t": D("2021-01-01T00:00:20"), "s": 3},
          {"t": D("2021-01-01T00:01:00"), "s": 4}]),
    Case("range_dates_weeks_and_ms",
         [{"t": D("2021-01-01T00:00:00"), "v": 1}, {"t": D("2021-01-06T00:00:00"), "v": 2},
          {"t": D("2021-01-20T00:00:00"), "v": 4}],
         by_t({"w": {"$sum": "$v", "window": {"range": [-1, 0], "unit": "week"}},
               "ms": {"$sum": "$v", "window": {"range": [0, 1], "unit": "millisecond"}}},
              ["w", "ms"]),
         [{"t": D("2021-01-01T00:00:00"), "w": 1, "ms": 1},
          {"t": D("2021-01-06T00:00:00"), "w": 3, "ms": 2},
          {"t": D("2021-01-20T00:00:00"), "w": 4, "ms": 4}]),
    Case("range_dates_years",
         [{"t": D("2019-06-01T00:00:00"), "v": 1}, {"t": D("2020-05-01T00:00:00"), "v": 2},
          {"t": D("2021-07-01T00:00:00"), "v": 4}],
         by_t({"s": {"$sum": "$v", "window": {"range": [-1, "current"], "unit": "year"}}}, ["s"]),
         [{"t": D("2019-06-01T00:00:00"), "s": 1}, {"t": D("2020-05-01T00:00:00"), "s": 3},
          {"t": D("2021-07-01T00:00:00"), "s": 4}]),
    # ---- partitions ----
    Case("partition_null_and_missing_together",
         [{"p": 1, "v": 4}, {"p": None, "v": 1}, {"v": 2}],
         [swf({"s": {"$sum": "$v"}}, partition_by="$p"), {"$project": {"_id": 0, "v": 1, "s": 1}}],
         [{"v": 1, "s": 3}, {"v": 2, "s": 3}, {"v": 4, "s": 4}]),
    Case("partition_by_expression",
         SERIES,
         [swf({"s": {"$sum": "$v"}}, sort_by={"t": 1}, partition_by={"$mod": ["$t", 2]}),
          {"$project": {"_id": 0, "t": 1, "s": 1}}],
         [{"t": 2, "s": 4}, {"t": 4, "s": 4}, {"t": 1, "s": 19}, {"t": 3, "s": 19},
          {"t": 5, "s": 19}]),
    Case("no_sort_keeps_input_order", [{"v": 3}, {"v": 1}, {"v": 2}],
         [swf({"s": {"$sum": "$v"}}), {"$project": {"_id": 0}}],
         [{"v": 3, "s": 6}, {"v": 1, "s": 6}, {"v": 2, "s": 6}]),
    Case("output_replaces_in_place_and_appends", [{"_id": 1, "a": 1, "b": 2}],
         [swf({"a": {"$sum": 10}, "c.d": {"$max": "$b"}})],
         [{"_id": 1, "a": 10, "b": 2, "c": {"d": 2}}], keys=["_id", "a", "b", "c"]),
    Case("inside_facet_and_followed_by_group", SERIES,
         [{"$facet": {
             "w": [swf({"s": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}}},
                       sort_by={"t": 1}),
                   {"$group": {"_id": None, "last": {"$max": "$s"}}}],
             "d": [{"$densify": {"field": "t", "range": {"step": 1, "bounds": [0, 7]}}},
                   {"$count": "n"}]}}],
         [{"w": [{"_id": None, "last": 23}], "d": [{"n": 7}]}]),
    # ---- rank family ----
    Case("rank_dense_rank_document_number",
         [{"_id": 1, "s": 90}, {"_id": 2, "s": 80}, {"_id": 3, "s": 90}, {"_id": 4, "s": 70}],
         [swf({"r": {"$rank": {}}, "d": {"$denseRank": {}}, "n": {"$documentNumber": {}}},
              sort_by={"s": -1})],
         [{"_id": 1, "s": 90, "r": 1, "d": 1, "n": 1}, {"_id": 3, "s": 90, "r": 1, "d": 1, "n": 2},
          {"_id": 2, "s": 80, "r": 3, "d": 2, "n": 3}, {"_id": 4, "s": 70, "r": 4, "d": 3, "n": 4}]),
    Case("rank_per_partition",
         [{"p": "a", "s": 2}, {"p": "b", "s": 1}, {"p": "a", "s": 1}, {"p": "b", "s": 1}],
         [swf({"r": {"$rank": {}}}, sort_by={"s": 1}, partition_by="$p"),
          {"$project": {"_id": 0}}],
         [{"p": "a", "s": 1, "r": 1}, {"p": "a", "s": 2, "r": 2}, {"p": "b", "s": 1, "r": 1},
          {"p": "b", "s": 1, "r": 1}]),
    Case("rank_null_and_missing_tie", [{"_id": 1, "s": None}, {"_id": 2}, {"_id": 3, "s": 5}],
         [swf({"r": {"$denseRank": {}}}, sort_by={"s": 1}), {"$project": {"_id": 1, "r": 1}}],
         [{"_id": 1, "r": 1}, {"_id": 2, "r": 1}, {"_id": 3, "r": 2}]),
    # ---- $median / $percentile ----
    Case("median_sliding", SERIES,
         by_t({"m": {"$median": {"input": "$v", "method": "approximate"},
                     "window": {"documents": [-1, 1]}}}, ["m"]),
         col("m", [3, 5, 3, 6, 1])),
    Case("percentile_ignores_non_numbers",
         [{"t": 1, "v": 1}, {"t": 2, "v": "x"}, {"t": 3, "v": None}, {"t": 4, "v": 3},
          {"t": 5, "v": 2}],
         [swf({"p": {"$percentile": {"input": "$v", "p": [0.5, 0.9, 0],
                                     "method": "approximate"}}}, sort_by={"t": 1}),
          {"$limit": 1}, {"$project": {"_id": 0, "p": 1}}],
         [{"p": [2, 3, 1]}]),
    Case("percentile_and_median_of_empty_window", SERIES,
         by_t({"p": {"$percentile": {"input": "$v", "p": [0.5, 0.9], "method": "approximate"},
                     "window": {"documents": [5, 6]}},
               "m": {"$median": {"input": "$missing", "method": "approximate"}}}, ["p", "m"]),
         [{"t": t, "p": [None, None], "m": None} for t in range(1, 6)]),
    Case("percentile_running_over_range",
         [{"t": 1, "v": 4}, {"t": 2, "v": 1}, {"t": 3, "v": 3}, {"t": 10, "v": 2}],
         by_t({"p": {"$percentile": {"input": "$v", "p": [1], "method": "approximate"},
                     "window": {"range": [-2, 0]}}}, ["p"]),
         [{"t": 1, "p": [4]}, {"t": 2, "p": [4]}, {"t": 3, "p": [4]}, {"t": 10, "p": [2]}]),
    # ---- $shift ----
    Case("shift_forward_backward_default", SERIES,
         by_t({"n": {"$shift": {"output": "$v", "by": 1}},
               "p": {"$shift": {"output": "$v", "by": -2, "default": "none"}},
               "z": {"$shift": {"output": "$v", "by": 0}}}, ["n", "p", "z"]),
         [{"t": 1, "n": 3, "p": "none", "z": 5}, {"t": 2, "n": 8, "p": "none", "z": 3},
          {"t": 3, "n": 1, "p": 5, "z": 8}, {"t": 4, "n": 6, "p": 3, "z": 1},
          {"t": 5, "n": None, "p": 8, "z": 6}]),
    Case("shift_stays_in_partition",
         [{"p": "a", "t": 1, "v": 1}, {"p": "b", "t": 2, "v": 2}, {"p": "a", "t": 3, "v": 3}],
         [swf({"n": {"$shift": {"output": "$v", "by": 1, "default": -1}}}, sort_by={"t": 1},
              partition_by="$p"), {"$project": {"_id": 0, "v": 1, "n": 1}}],
         [{"v": 1, "n": 3}, {"v": 3, "n": -1}, {"v": 2, "n": -1}]),
    Case("shift_and_first_onto_missing_field_leave_it_absent",
         [{"_id": 1, "t": 1}, {"_id": 2, "t": 2, "v": 5, "f": 0, "s": 0}],
         [swf({"s": {"$shift": {"output": "$v", "by": -1, "default": "d"}},
               "f": {"$first": "$v", "window": {"documents": [-1, 0]}},
               "l": {"$last": "$v", "window": {"documents": [5, 6]}}}, sort_by={"t": 1})],
         [{"_id": 1, "t": 1, "s": "d", "l": None}, {"_id": 2, "t": 2, "v": 5, "l": None}]),
    # ---- $expMovingAvg ----
    Case("exp_moving_avg_n", col("v", [10, 20, 30]),
         by_t({"e": {"$expMovingAvg": {"input": "$v", "N": 2}}}, ["e"]),
         col("e", [10, approx(50 / 3), approx(20 + 50 / 9)])),
    Case("exp_moving_avg_alpha_skips_non_numeric", col("v", ["x", 10, None, 20]),
         by_t({"e": {"$expMovingAvg": {"input": "$v", "alpha": 0.5}}}, ["e"]),
         col("e", [None, 10, 10, 15])),
    # ---- $derivative and $integral ----
    Case("manual_derivative_truck_speed", TRUCKS,
         [swf({"speed": {"$derivative": {"input": "$miles", "unit": "hour"},
                         "window": {"range": [-30, 0], "unit": "second"}}},
              sort_by={"timeStamp": 1}, partition_by="$truckID"),
          {"$match": {"speed": {"$gt": 50}}},
          {"$project": {"_id": 0, "truckID": 1, "speed": 1}}],
         [{"truckID": "1", "speed": approx(63.6)}, {"truckID": "1", "speed": approx(74.4)},
          {"truckID": "1", "speed": approx(318.0)}]),
    Case("derivative_numeric_sort", [{"t": 0, "v": 0}, {"t": 2, "v": 4}, {"t": 4, "v": 4}],
         by_t({"d": {"$derivative": {"input": "$v"}, "window": {"documents": [-1, 0]}}}, ["d"]),
         [{"t": 0, "d": None}, {"t": 2, "d": 2}, {"t": 4, "d": 0}]),
    Case("manual_integral_kilowatt_hours", POWER,
         [swf({"kwh": {"$integral": {"input": "$kilowatts", "unit": "hour"},
                       "window": {"range": ["unbounded", "current"], "unit": "minute"}}},
              sort_by={"timeStamp": 1}, partition_by="$powerMeterID"),
          {"$match": {"powerMeterID": "1"}}, {"$project": {"_id": 0, "kwh": 1}}],
         [{"kwh": 0}, {"kwh": approx(0.023541666666666666)}, {"kwh": approx(0.045625)},
          {"kwh": approx(0.068875)}]),
    Case("integral_numeric_sort", [{"t": 0, "v": 2}, {"t": 1, "v": 4}, {"t": 3, "v": 4}],
         by_t({"i": {"$integral": {"input": "$v"},
                     "window": {"documents": ["unbounded", "current"]}},
               "w": {"$integral": {"input": "$v"}, "window": {"range": [-1, 0]}}}, ["i", "w"]),
         [{"t": 0, "i": 0, "w": 0}, {"t": 1, "i": 3, "w": 3}, {"t": 3, "i": 11, "w": 0}]),
    # ---- covariance ----
    Case("manual_covariance_pop_samp", CAKES,
         [swf({"cp": {"$covariancePop": [{"$year": "$orderDate"}, "$quantity"],
                      "window": {"documents": ["unbounded", "current"]}},
               "cs": {"$covarianceSamp": [{"$year": "$orderDate"}, "$quantity"],
                      "window": {"documents": ["unbounded", "current"]}}},
              sort_by={"orderDate": 1}, partition_by="$state"),
          {"$project": {"_id": 1, "cp": 1, "cs": 1}}],
         [{"_id": 4, "cp": 0, "cs": None}, {"_id": 0, "cp": -10.5, "cs": -21},
          {"_id": 2, "cp": approx(-17 / 3), "cs": approx(-8.5)},
          {"_id": 5, "cp": 0, "cs": None}, {"_id": 3, "cp": 0.25, "cs": 0.5},
          {"_id": 1, "cp": approx(37 / 3), "cs": approx(18.5)}]),
    # ---- $locf / $linearFill ----
    Case("locf_window_function", REVIEWS,
         [swf({"score": {"$locf": "$score"}}, sort_by={"date": 1}),
          {"$project": {"_id": 0, "score": 1}}],
         [{"score": 90}, {"score": 92}, {"score": 92}, {"score": 92}, {"score": 85},
          {"score": 85}]),
    Case("linear_fill_window_function", STOCK,
         [swf({"price": {"$linearFill": "$price"}}, sort_by={"time": 1}),
          {"$project": {"_id": 0, "price": 1}}],
         [{"price": 500}, {"price": 507.5}, {"price": 515}, {"price": 505}, {"price": 495},
          {"price": 485}]),
    Case("linear_fill_leading_trailing_nulls_stay_null",
         [{"t": 1}, {"t": 2, "v": 2}, {"t": 3}, {"t": 4, "v": 6}, {"t": 5, "v": None}],
         by_t({"v": {"$linearFill": "$v"}}, ["v"]),
         col("v", [None, 2, 4, 6, None])),
    # ---- $fill ----
    Case("manual_fill_locf", REVIEWS,
         [{"$fill": {"sortBy": {"date": 1}, "output": {"score": {"method": "locf"}}}},
          {"$project": {"_id": 0, "date": 1, "score": 1}}],
         [{"date": D("2021-03-08"), "score": 90}, {"date": D("2021-03-09"), "score": 92},
          {"date": D("2021-03-10"), "score": 92}, {"date": D("2021-03-11"), "score": 92},
          {"date": D("2021-03-12"), "score": 85}, {"date": D("2021-03-13"), "score": 85}]),
    Case("manual_fill_linear", STOCK,
         [{"$fill": {"sortBy": {"time": 1}, "output": {"price": {"method": "linear"}}}},
          {"$project": {"_id": 0, "price": 1}}],
         [{"price": 500}, {"price": 507.5}, {"price": 515}, {"price": 505}, {"price": 495},
          {"price": 485}]),
    Case("fill_value_constant_and_expression",
         [{"_id": 1, "a": None, "b": 4}, {"_id": 2, "a": 3}, {"_id": 3, "b": 5}],
         [{"$fill": {"output": {"a": {"value": 0}, "b": {"value": {"$multiply": [2, "$a"]}}}}}],
         [{"_id": 1, "a": 0, "b": 4}, {"_id": 2, "a": 3, "b": 6}, {"_id": 3, "b": 5, "a": 0}]),
    Case("fill_locf_partition_by_fields_no_sort",
         [{"p": "x", "v": 1}, {"p": "y", "v": 7}, {"p": "x"}, {"p": "y"}],
         [{"$fill": {"partitionByFields": ["p"], "output": {"v": {"method": "locf"}}}},
          {"$project": {"_id": 0}}],
         [{"p": "x", "v": 1}, {"p": "x", "v": 1}, {"p": "y", "v": 7}, {"p": "y", "v": 7}]),
    Case("fill_partition_by_expression_and_sort",
         [{"p": "x", "t": 2}, {"p": "x", "t": 1, "v": 5}, {"p": "y", "t": 3}],
         [{"$fill": {"partitionBy": "$p", "sortBy": {"t": 1},
                     "output": {"v": {"method": "locf"}}}}, {"$project": {"_id": 0}}],
         [{"p": "x", "t": 1, "v": 5}, {"p": "x", "t": 2, "v": 5}, {"p": "y", "t": 3, "v": None}]),
    # ---- $densify ----
    Case("manual_densify_time_series", WEATHER,
         [{"$densify": {"field": "timestamp",
                        "range": {"step": 1, "unit": "hour",
                                  "bounds": [D("2021-05-18T00:00:00"), D("2021-05-18T08:00:00")]}}},
          {"$project": {"_id": 0, "timestamp": 1, "temp": 1}}],
         [{"timestamp": D("2021-05-18T00:00:00"), "temp": 12},
          {"timestamp": D("2021-05-18T01:00:00")}, {"timestamp": D("2021-05-18T02:00:00")},
          {"timestamp": D("2021-05-18T03:00:00")},
          {"timestamp": D("2021-05-18T04:00:00"), "temp": 11},
          {"timestamp": D("2021-05-18T05:00:00")}, {"timestamp": D("2021-05-18T06:00:00")},
          {"timestamp": D("2021-05-18T07:00:00")},
          {"timestamp": D("2021-05-18T08:00:00"), "temp": 11},
          {"timestamp": D("2021-05-18T12:00:00"), "temp": 12}]),
    Case("densify_partition_bounds",
         [{"variety": "Arabica", "altitude": 600}, {"variety": "Arabica", "altitude": 750},
          {"variety": "Arabica", "altitude": 950}, {"variety": "Gesha", "altitude": 1250},
          {"variety": "Gesha", "altitude": 1700}],
         [{"$densify": {"field": "altitude", "partitionByFields": ["variety"],
                        "range": {"bounds": "partition", "step": 200}}},
          {"$project": {"_id": 0, "variety": 1, "altitude": 1}}],
         [{"variety": "Arabica", "altitude": 600}, {"variety": "Arabica", "altitude": 750},
          {"variety": "Arabica", "altitude": 800}, {"variety": "Arabica", "altitude": 950},
          {"variety": "Gesha", "altitude": 1250}, {"variety": "Gesha", "altitude": 1450},
          {"variety": "Gesha", "altitude": 1650}, {"variety": "Gesha", "altitude": 1700}]),
    Case("densify_full_bounds_with_partitions",
         [{"p": "a", "v": 0}, {"p": "b", "v": 3}, {"p": "a", "v": 5}],
         [{"$densify": {"field": "v", "partitionByFields": ["p"],
                        "range": {"bounds": "full", "step": 2}}}, {"$project": {"_id": 0}}],
         [{"p": "a", "v": 0}, {"p": "a", "v": 2}, {"p": "a", "v": 4}, {"p": "a", "v": 5},
          {"p": "b", "v": 0}, {"p": "b", "v": 2}, {"p": "b", "v": 3}, {"p": "b", "v": 4}],
         unordered=True),
    Case("densify_explicit_per_partition_upper_exclusive",
         [{"p": "a", "v": 7}, {"p": "b", "v": 10}],
         [{"$densify": {"field": "v", "partitionByFields": ["p"],
                        "range": {"bounds": [0, 10], "step": 5}}}, {"$project": {"_id": 0}}],
         [{"p": "a", "v": 0}, {"p": "a", "v": 5}, {"p": "a", "v": 7}, {"p": "b", "v": 0},
          {"p": "b", "v": 5}, {"p": "b", "v": 10}]),
    Case("densify_nested_field_double_step_nulls_pass",
         [{"a": {"b": 2.0}}, {"a": {"b": 1.0}}, {"a": None}],
         [{"$densify": {"field": "a.b", "range": {"bounds": "full", "step": 0.5}}},
          {"$project": {"_id": 0}}],
         [{"a": None}, {"a": {"b": 1.0}}, {"a": {"b": 1.5}}, {"a": {"b": 2.0}}]),
    Case("densify_days_full", [{"t": D("2021-01-03")}, {"t": D("2021-01-01")}],
         [{"$densify": {"field": "t", "range": {"bounds": "full", "step": 1, "unit": "day"}}},
          {"$project": {"_id": 0}}],
         [{"t": D("2021-01-01")}, {"t": D("2021-01-02")}, {"t": D("2021-01-03")}]),
    Case("densify_huge_date_step_generates_nothing",
         [{"t": D("2021-01-03")}, {"t": D("2021-01-01")}],
         [{"$densify": {"field": "t", "range": {"bounds": "full", "step": 10 ** 15,
                                                 "unit": "year"}}},
          {"$project": {"_id": 0}}],
         [{"t": D("2021-01-01")}, {"t": D("2021-01-03")}]),
    # ---- time-series collections ----
    Case("ts_cumulative_sum_by_meta",
         [{"m": "s1", "t": D("2021-01-01T00:00:00"), "v": 1},
          {"m": "s2", "t": D("2021-01-01T00:00:00"), "v": 10},
          {"m": "s1", "t": D("2021-01-01T00:02:00"), "v": 3},
          {"m": "s1", "t": D("2021-01-01T00:01:00"), "v": 2}],
         [swf({"s": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}}},
              sort_by={"t": 1}, partition_by="$m"),
          {"$project": {"_id": 0, "m": 1, "s": 1}}],
         [{"m": "s1", "s": 1}, {"m": "s1", "s": 3}, {"m": "s1", "s": 6}, {"m": "s2", "s": 10}],
         ts=True),
    Case("ts_range_window_minutes",
         [{"m": "s", "t": D("2021-01-01T00:00:00"), "v": 1},
          {"m": "s", "t": D("2021-01-01T00:04:00"), "v": 2},
          {"m": "s", "t": D("2021-01-01T00:12:00"), "v": 4}],
         [swf({"a": {"$avg": "$v", "window": {"range": [-5, 0], "unit": "minute"}}},
              sort_by={"t": 1}),
          {"$project": {"_id": 0, "a": 1}}],
         [{"a": 1}, {"a": 1.5}, {"a": 4}], ts=True),
    Case("ts_densify_hours_by_meta",
         [{"m": "a", "t": D("2021-01-01T00:00:00"), "v": 1},
          {"m": "a", "t": D("2021-01-01T03:00:00"), "v": 2},
          {"m": "b", "t": D("2021-01-01T01:00:00"), "v": 3}],
         [{"$densify": {"field": "t", "partitionByFields": ["m"],
                        "range": {"bounds": "partition", "step": 1, "unit": "hour"}}},
          {"$project": {"_id": 0, "m": 1, "t": 1}}],
         [{"m": "a", "t": D("2021-01-01T00:00:00")}, {"m": "a", "t": D("2021-01-01T01:00:00")},
          {"m": "a", "t": D("2021-01-01T02:00:00")}, {"m": "a", "t": D("2021-01-01T03:00:00")},
          {"m": "b", "t": D("2021-01-01T01:00:00")}], ts=True),
    Case("ts_fill_linear",
         [{"m": "a", "t": D("2021-01-01T00:00:00"), "v": 10},
          {"m": "a", "t": D("2021-01-01T00:01:00"), "v": None},
          {"m": "a", "t": D("2021-01-01T00:02:00"), "v": 30}],
         [{"$fill": {"sortBy": {"t": 1}, "partitionByFields": ["m"],
                     "output": {"v": {"method": "linear"}}}},
          {"$project": {"_id": 0, "v": 1}}],
         [{"v": 10}, {"v": 20}, {"v": 30}], ts=True),
    Case("ts_rank_by_value",
         [{"m": "a", "t": D("2021-01-01T00:00:00"), "v": 5},
          {"m": "a", "t": D("2021-01-01T00:01:00"), "v": 9},
          {"m": "a", "t": D("2021-01-01T00:02:00"), "v": 5}],
         [swf({"r": {"$rank": {}}}, sort_by={"v": -1}), {"$project": {"_id": 0, "v": 1, "r": 1}}],
         [{"v": 9, "r": 1}, {"v": 5, "r": 2}, {"v": 5, "r": 2}], ts=True),
]

ONE = [{"t": 1, "v": 1}]

ERROR_CASES = [
    # $setWindowFields spec
    Case("swf_not_object", ONE, [{"$setWindowFields": 1}], error=9),
    Case("swf_missing_output", ONE, [{"$setWindowFields": {"sortBy": {"t": 1}}}], error=40414),
    Case("swf_unknown_field", ONE, [{"$setWindowFields": {"output": {}, "x": 1}}], error=40415),
    Case("swf_sort_by_not_object", ONE,
         [{"$setWindowFields": {"sortBy": 1, "output": {}}}], error=14),
    Case("swf_output_not_object", ONE, [{"$setWindowFields": {"output": 1}}], error=14),
    Case("swf_output_field_not_object", ONE, [swf({"x": 1})], error=9),
    Case("swf_output_field_dollar", ONE, [swf({"$x": {"$sum": 1}})], error=16410),
    Case("swf_unknown_function", ONE, [swf({"x": {"$summ": "$v"}})], error=9),
    Case("swf_no_function", ONE, [swf({"x": {"window": {"documents": [0, 0]}}})], error=9),
    Case("swf_two_functions", ONE, [swf({"x": {"$sum": 1, "$max": 1}})], error=9),
    Case("swf_unknown_argument", ONE, [swf({"x": {"$sum": 1, "foo": 1}})], error=9),
    Case("accumulator_not_unary", ONE, [swf({"x": {"$sum": [1, 2]}})], error=40237),
    # A documented difference (docs/compatibility.md): range windows need an ascending sortBy.
    Case("range_window_descending_sort", ONE,
         [swf({"x": {"$sum": "$v", "window": {"range": [-1, 0]}}}, sort_by={"t": -1})],
         error=8947401),
    Case("median_exact_method_rejected", ONE,
         [swf({"x": {"$median": {"input": "$v", "method": "exact"}}})], error=2),
    Case("median_missing_method", ONE, [swf({"x": {"$median": {"input": "$v"}}})], error=40414),
    Case("median_with_p", ONE,
         [swf({"x": {"$median": {"input": "$v", "p": [0.5], "method": "approximate"}}})],
         error=40415),
    Case("median_not_object", ONE, [swf({"x": {"$median": "$v"}})], error=7436100),
    Case("percentile_missing_p", ONE,
         [swf({"x": {"$percentile": {"input": "$v", "method": "approximate"}}})], error=40414),
    Case("percentile_p_not_array", ONE,
         [swf({"x": {"$percentile": {"input": "$v", "p": 0.5, "method": "approximate"}}})],
         error=7750301),
    Case("percentile_p_empty", ONE,
         [swf({"x": {"$percentile": {"input": "$v", "p": [], "method": "approximate"}}})],
         error=7750301),
    Case("percentile_p_not_number", ONE,
         [swf({"x": {"$percentile": {"input": "$v", "p": ["a"], "method": "approximate"}}})],
         error=7750302),
    Case("percentile_p_out_of_range", ONE,
         [swf({"x": {"$percentile": {"input": "$v", "p": [0.5, 1.5], "method": "approximate"}}})],
         error=7750303),
    Case("percentile_p_not_constant", ONE,
         [swf({"x": {"$percentile": {"input": "$v", "p": "$v", "method": "approximate"}}})],
         error=7750300),
    Case("swf_top_n_without_sort_by", ONE,
         [swf({"x": {"$topN": {"n": 1, "output": "$v"}}})], error=5788005),
    Case("swf_count_with_argument", ONE, [swf({"x": {"$count": 1}})], error=9),
    Case("swf_partition_by_array", [{"a": [1, 2]}], [swf({"x": {"$sum": 1}}, partition_by="$a")],
         error=5722400),
    # window bounds
    Case("window_not_object", ONE, [swf({"x": {"$sum": 1, "window": 1}}, sort_by={"t": 1})],
         error=9),
    Case("window_unknown_field", ONE,
         [swf({"x": {"$sum": 1, "window": {"rows": [0, 1]}}}, sort_by={"t": 1})], error=9),
    Case("window_documents_and_range", ONE,
         [swf({"x": {"$sum": 1, "window": {"documents": [0, 1], "range": [0, 1]}}},
              sort_by={"t": 1})], error=9),
    Case("window_unit_with_documents", ONE,
         [swf({"x": {"$sum": 1, "window": {"documents": [0, 1], "unit": "day"}}},
              sort_by={"t": 1})], error=9),
    Case("window_bounds_not_pair", ONE,
         [swf({"x": {"$sum": 1, "window": {"documents": [0]}}}, sort_by={"t": 1})], error=9),
    Case("window_bad_bound_string", ONE,
         [swf({"x": {"$sum": 1, "window": {"documents": ["first", 0]}}}, sort_by={"t": 1})],
         error=9),
    Case("window_fractional_document_bound", ONE,
         [swf({"x": {"$sum": 1, "window": {"documents": [-1.5, 0]}}}, sort_by={"t": 1})],
         error=9),
    Case("window_document_bound_beyond_int32", ONE,
         [swf({"x": {"$sum": 1, "window": {"documents": [-1e30, 0]}}}, sort_by={"t": 1})],
         error=9),
    Case("window_fractional_unit_bound", ONE,
         [swf({"x": {"$sum": 1, "window": {"range": [-1.5, 0], "unit": "day"}}},
              sort_by={"t": 1})], error=9),
    Case("window_bad_unit", ONE,
         [swf({"x": {"$sum": 1, "window": {"range": [-1, 0], "unit": "fortnight"}}},
              sort_by={"t": 1})], error=9),
    Case("window_lower_above_upper", ONE,
         [swf({"x": {"$sum": 1, "window": {"documents": [1, 0]}}}, sort_by={"t": 1})],
         error=5339900),
    Case("window_current_above_upper", ONE,
         [swf({"x": {"$sum": 1, "window": {"range": ["current", -1]}}}, sort_by={"t": 1})],
         error=5339900),
    Case("window_documents_need_sort", ONE,
         [swf({"x": {"$sum": 1, "window": {"documents": [-1, 0]}}})], error=5339901),
    Case("window_range_needs_sort", ONE,
         [swf({"x": {"$sum": 1, "window": {"range": [-1, 0]}}})], error=5339902),
    Case("window_range_compound_sort", ONE,
         [swf({"x": {"$sum": 1, "window": {"range": [-1, 0]}}}, sort_by={"t": 1, "v": 1})],
         error=5339902),
    Case("window_range_over_string", [{"t": "a"}],
         [swf({"x": {"$sum": 1, "window": {"range": [-1, 0]}}}, sort_by={"t": 1})],
         error=5429414),
    Case("window_range_over_null_first", [{"t": 1}, {"t": None}],
         [swf({"x": {"$sum": 1, "window": {"range": [-1, 0]}}}, sort_by={"t": 1})],
         error=5429414),
    Case("window_range_over_date_without_unit", [{"t": D("2021-01-01")}],
         [swf({"x": {"$sum": 1, "window": {"range": [-1, 0]}}}, sort_by={"t": 1})],
         error=5429413),
    Case("window_range_unit_over_number", ONE,
         [swf({"x": {"$sum": 1, "window": {"range": [-1, 0], "unit": "hour"}}},
              sort_by={"t": 1})], error=5429513),
    # rank family
    Case("rank_needs_sort", ONE, [swf({"r": {"$rank": {}}})], error=5371602),
    Case("rank_compound_sort", ONE, [swf({"r": {"$denseRank": {}}}, sort_by={"t": 1, "v": 1})],
         error=5371602),
    Case("rank_with_argument", ONE, [swf({"r": {"$documentNumber": 1}}, sort_by={"t": 1})],
         error=5371603),
    Case("rank_with_window", ONE,
         [swf({"r": {"$rank": {}, "window": {"documents": [0, 0]}}}, sort_by={"t": 1})],
         error=5371601),
    # $shift
    Case("shift_needs_sort", ONE, [swf({"x": {"$shift": {"output": "$v", "by": 1}}})], error=9),
    Case("shift_by_fraction", ONE,
         [swf({"x": {"$shift": {"output": "$v", "by": 1.5}}}, sort_by={"t": 1})], error=9),
    Case("shift_missing_by", ONE, [swf({"x": {"$shift": {"output": "$v"}}}, sort_by={"t": 1})],
         error=9),
    Case("shift_default_not_constant", ONE,
         [swf({"x": {"$shift": {"output": "$v", "by": 1, "default": "$v"}}}, sort_by={"t": 1})],
         error=9),
    Case("shift_with_window", ONE,
         [swf({"x": {"$shift": {"output": "$v", "by": 1}, "window": {"documents": [0, 0]}}},
              sort_by={"t": 1})], error=9),
    # $expMovingAvg
    Case("ema_needs_sort", ONE, [swf({"e": {"$expMovingAvg": {"input": "$v", "N": 2}}})], error=9),
    Case("ema_n_zero", ONE,
         [swf({"e": {"$expMovingAvg": {"input": "$v", "N": 0}}}, sort_by={"t": 1})], error=9),
    Case("ema_alpha_one", ONE,
         [swf({"e": {"$expMovingAvg": {"input": "$v", "alpha": 1}}}, sort_by={"t": 1})], error=9),
    Case("ema_n_and_alpha", ONE,
         [swf({"e": {"$expMovingAvg": {"input": "$v", "N": 2, "alpha": 0.5}}},
              sort_by={"t": 1})], error=9),
    # $derivative / $integral
    Case("derivative_needs_window", ONE,
         [swf({"d": {"$derivative": {"input": "$v"}}}, sort_by={"t": 1})], error=9),
    Case("derivative_needs_sort", ONE,
         [swf({"d": {"$derivative": {"input": "$v"}, "window": {"documents": [-1, 0]}}})],
         error=9),
    Case("derivative_unit_month", ONE,
         [swf({"d": {"$derivative": {"input": "$v", "unit": "month"},
                     "window": {"documents": [-1, 0]}}}, sort_by={"t": 1})], error=5490710),
    Case("derivative_unit_over_numbers", [{"t": 1, "v": 1}, {"t": 2, "v": 2}],
         [swf({"d": {"$derivative": {"input": "$v", "unit": "second"},
                     "window": {"documents": [-1, 0]}}}, sort_by={"t": 1})], error=5624900),
    Case("derivative_dates_without_unit", [{"t": D("2021-01-01"), "v": 1}],
         [swf({"d": {"$derivative": {"input": "$v"}, "window": {"documents": [-1, 0]}}},
              sort_by={"t": 1})], error=5624901),
    Case("derivative_null_input", [{"t": 1, "v": 1}, {"t": 2}],
         [swf({"d": {"$derivative": {"input": "$v"}, "window": {"documents": [-1, 0]}}},
              sort_by={"t": 1})], error=5624903),
    Case("integral_null_input", [{"t": 1, "v": 1}, {"t": 2, "v": None}],
         [swf({"i": {"$integral": {"input": "$v"}}}, sort_by={"t": 1})], error=5423900),
    Case("integral_string_sort", [{"t": "a", "v": 1}],
         [swf({"i": {"$integral": {"input": "$v"}}}, sort_by={"t": 1})], error=5423900),
    Case("integral_unit_over_numbers", ONE,
         [swf({"i": {"$integral": {"input": "$v", "unit": "hour"}}}, sort_by={"t": 1})],
         error=5423901),
    Case("integral_dates_without_unit", [{"t": D("2021-01-01"), "v": 1}],
         [swf({"i": {"$integral": {"input": "$v"}}}, sort_by={"t": 1})], error=5423902),
    Case("integral_missing_input", ONE,
         [swf({"i": {"$integral": {"unit": "hour"}}}, sort_by={"t": 1})], error=9),
    # $linearFill / $locf
    Case("linear_fill_needs_sort", ONE, [swf({"v": {"$linearFill": "$v"}})], error=605001),
    Case("linear_fill_repeated_sort_value", [{"t": 1, "v": 1}, {"t": 1, "v": 2}],
         [swf({"v": {"$linearFill": "$v"}}, sort_by={"t": 1})], error=6050106),
    Case("linear_fill_non_numeric_value", [{"t": 1, "v": "x"}],
         [swf({"v": {"$linearFill": "$v"}}, sort_by={"t": 1})], error=14),
    Case("locf_with_window", ONE,
         [swf({"v": {"$locf": "$v", "window": {"documents": [0, 0]}}}, sort_by={"t": 1})],
         error=9),
    # $fill
    Case("fill_not_object", ONE, [{"$fill": []}], error=9),
    Case("fill_missing_output", ONE, [{"$fill": {"sortBy": {"t": 1}}}], error=40414),
    Case("fill_unknown_field", ONE, [{"$fill": {"output": {"v": {"value": 1}}, "x": 1}}],
         error=40415),
    Case("fill_empty_output", ONE, [{"$fill": {"output": {}}}], error=6050203),
    Case("fill_output_not_object", ONE, [{"$fill": {"output": {"v": 1}}}], error=6050200),
    Case("fill_value_and_method", ONE,
         [{"$fill": {"output": {"v": {"value": 1, "method": "locf"}}}}], error=6050201),
    Case("fill_bad_method", ONE, [{"$fill": {"output": {"v": {"method": "nearest"}}}}],
         error=6050202),
    Case("fill_both_partitions", ONE,
         [{"$fill": {"partitionBy": "$p", "partitionByFields": ["p"],
                     "output": {"v": {"method": "locf"}}}}], error=6050204),
    Case("fill_linear_needs_sort", ONE, [{"$fill": {"output": {"v": {"method": "linear"}}}}],
         error=605001),
    # $densify
    Case("densify_not_object", ONE, [{"$densify": "v"}], error=9),
    Case("densify_missing_field", ONE, [{"$densify": {"range": {"step": 1, "bounds": "full"}}}],
         error=40414),
    Case("densify_missing_range", ONE, [{"$densify": {"field": "v"}}], error=40414),
    Case("densify_unknown_field", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1, "bounds": "full"}, "x": 1}}],
         error=40415),
    Case("densify_unknown_range_field", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1, "bounds": "full", "x": 1}}}],
         error=40415),
    Case("densify_step_not_number", ONE,
         [{"$densify": {"field": "v", "range": {"step": "1", "bounds": "full"}}}], error=5733401),
    Case("densify_step_negative", ONE,
         [{"$densify": {"field": "v", "range": {"step": -1, "bounds": "full"}}}], error=5733401),
    Case("densify_partition_without_fields", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1, "bounds": "partition"}}}],
         error=5733408),
    Case("densify_bad_bounds_string", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1, "bounds": "all"}}}], error=5946802),
    Case("densify_bounds_number", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1, "bounds": 5}}}], error=5733404),
    Case("densify_bounds_three", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1, "bounds": [1, 2, 3]}}}], error=5733403),
    Case("densify_bounds_descending", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1, "bounds": [2, 1]}}}], error=5733402),
    Case("densify_bounds_mixed", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1, "bounds": [1, D("2021-01-01")]}}}],
         error=5733406),
    Case("densify_bounds_strings", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1, "bounds": ["a", "b"]}}}],
         error=5946800),
    Case("densify_bounds_types_differ_from_step", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1.5, "bounds": [0, 10]}}}],
         error=5876900),
    Case("densify_numeric_bounds_with_unit", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1, "unit": "day", "bounds": [0, 10]}}}],
         error=5733409),
    Case("densify_date_bounds_without_unit", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1,
                                                 "bounds": [D("2021-01-01"), D("2021-01-02")]}}}],
         error=5733410),
    Case("densify_fractional_date_step", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1.5, "unit": "day", "bounds": "full"}}}],
         error=6586400),
    Case("densify_string_value", [{"v": "x"}],
         [{"$densify": {"field": "v", "range": {"step": 1, "bounds": "full"}}}], error=5733201),
    Case("densify_number_with_unit", ONE,
         [{"$densify": {"field": "v", "range": {"step": 1, "unit": "hour", "bounds": "full"}}}],
         error=6053600),
    Case("densify_date_without_unit", [{"v": D("2021-01-01")}],
         [{"$densify": {"field": "v", "range": {"step": 1, "bounds": "full"}}}], error=6053600),
    Case("densify_too_many_documents", [{"v": 0}, {"v": 1000000}],
         [{"$densify": {"field": "v", "range": {"step": 1, "bounds": "full"}}}], error=5897900),
]


def _strip_ids(docs):
    return [{k: v for k, v in d.items() if k != "_id"} for d in docs]


def _collection(db, case):
    if case.ts:
        db.create_collection("c", timeseries={"timeField": "t", "metaField": "m"})
    coll = db["c"]
    if case.docs:
        coll.insert_many([dict(d) for d in case.docs])
    return coll


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_window_stage(db, case):
    coll = _collection(db, case)
    got = list(coll.aggregate(case.pipeline))
    if not any("_id" in d for d in case.expected):
        got = _strip_ids(got)
    if case.unordered:
        got = sorted(got, key=repr)
        want = sorted(case.expected, key=repr)
    else:
        want = case.expected
    assert got == want
    if case.keys is not None:
        for d in got:
            assert list(d.keys()) == case.keys


@pytest.mark.parametrize("case", ERROR_CASES, ids=lambda c: c.name)
def test_window_stage_error(db, case):
    coll = _collection(db, case)
    with pytest.raises(OperationFailure) as e:
        list(coll.aggregate(case.pipeline))
    assert e.value.code == case.error, e.value.details


def test_allow_disk_use_is_accepted(db):
    db.c.insert_many([{"t": i, "v": i} for i in range(50)])
    got = list(db.c.aggregate(
        [swf({"s": {"$sum": "$v", "window": {"documents": ["unbounded", "current"]}}},
             sort_by={"t": 1}), {"$project": {"_id": 0, "s": 1}}],
        allowDiskUse=True, batchSize=7))
    assert [d["s"] for d in got] == [i * (i + 1) // 2 for i in range(50)]


def test_error_code_names(db):
    db.c.insert_one({"t": 1})
    with pytest.raises(OperationFailure) as e:
        list(db.c.aggregate([swf({"x": {"$nope": 1}})]))
    assert e.value.details["codeName"] == "FailedToParse"



def test_median_window_skips_nan_like_group(db):
    # $median ignores NaN, in a window as in $group: the median of 1, 3, 5 is 3.
    db.nan.insert_many([{"t": i, "v": v} for i, v in enumerate([1, float("nan"), 3, 5])])
    method = {"input": "$v", "method": "approximate"}
    window = list(db.nan.aggregate([
        {"$setWindowFields": {"sortBy": {"t": 1}, "output": {
            "m": {"$median": method, "window": {"documents": ["unbounded", "unbounded"]}},
            "r": {"$median": method, "window": {"documents": [-1, 0]}}}}},
        {"$sort": {"t": 1}}]))
    grouped = list(db.nan.aggregate([{"$group": {"_id": None, "m": {"$median": method}}}]))
    assert grouped[0]["m"] == 3
    assert [d["m"] for d in window] == [3, 3, 3, 3]
    # Sliding windows of two rows: [1], [1, NaN], [NaN, 3], [3, 5].
    assert [d["r"] for d in window] == [1, 1, 3, 3]

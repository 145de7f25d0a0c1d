"""The n-ary window functions of $setWindowFields ($top $bottom $topN $bottomN $firstN $lastN
$minN $maxN) over document and range windows, on the MongoDB manual's cakeSales documents.
Expected values are worked out by hand from the documented semantics: partitions by state,
ordered by orderDate (CA: _id 4, 0, 2; WA: _id 5, 3, 1)."""

import pytest
from pymongo.errors import OperationFailure

from test_agg_window import CAKES, swf


def by_state(output):
    return [swf({"x": output}, sort_by={"orderDate": 1}, partition_by="$state"),
            {"$project": {"_id": 1, "x": 1}}, {"$sort": {"_id": 1}}]


def per_id(values):
    """Expected output from {_id: x}."""
    return [{"_id": i, "x": values[i]} for i in sorted(values)]


CASES = [
    ("firstN_growing",
     {"$firstN": {"n": 2, "input": "$quantity"}, "window": {"documents": ["unbounded", "current"]}},
     {4: [162], 0: [162, 120], 2: [162, 120], 5: [103], 3: [103, 104], 1: [103, 104]}),
    ("lastN_sliding",
     {"$lastN": {"n": 2, "input": "$quantity"}, "window": {"documents": [-1, 1]}},
     {4: [162, 120], 0: [120, 145], 2: [120, 145], 5: [103, 104], 3: [104, 140], 1: [104, 140]}),
    ("maxN_whole_partition", {"$maxN": {"n": 2, "input": "$quantity"}},
     {4: [162, 145], 0: [162, 145], 2: [162, 145], 5: [140, 104], 3: [140, 104], 1: [140, 104]}),
    ("minN_current_and_next",
     {"$minN": {"n": 2, "input": "$price"}, "window": {"documents": [0, 1]}},
     {4: [13, 41], 0: [12, 13], 2: [12], 5: [4, 13], 3: [13, 14], 1: [14]}),
    ("topN_growing",
     {"$topN": {"n": 2, "sortBy": {"quantity": -1}, "output": "$_id"},
      "window": {"documents": ["unbounded", "current"]}},
     {4: [4], 0: [4, 0], 2: [4, 2], 5: [5], 3: [3, 5], 1: [1, 3]}),
    ("bottom_whole_partition", {"$bottom": {"sortBy": {"price": 1}, "output": "$type"}},
     {4: "strawberry", 0: "strawberry", 2: "strawberry", 5: "chocolate", 3: "chocolate",
      1: "chocolate"}),
    ("top_range_one_year",
     {"$top": {"sortBy": {"price": 1}, "output": "$type"},
      "window": {"range": [-1, 0], "unit": "year"}},
     {4: "strawberry", 0: "chocolate", 2: "vanilla", 5: "strawberry", 3: "vanilla",
      1: "chocolate"}),
    ("bottomN_to_the_end",
     {"$bottomN": {"n": 2, "sortBy": {"price": 1}, "output": "$price"},
      "window": {"documents": ["current", "unbounded"]}},
     {4: [13, 41], 0: [12, 13], 2: [12], 5: [13, 14], 3: [13, 14], 1: [14]}),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_nary_window_functions(db, case):
    _, output, expected = case
    db.cakes.insert_many(CAKES)
    assert list(db.cakes.aggregate(by_state(output))) == per_id(expected)


ERRORS = [
    ("topN_without_sortBy", {"$topN": {"n": 1, "output": "$price"}}, 5788005),
    ("top_with_n", {"$top": {"n": 1, "sortBy": {"price": 1}, "output": "$price"}}, 5788002),
    ("firstN_n_zero", {"$firstN": {"n": 0, "input": "$price"}}, 5787908),
    ("minN_without_input", {"$minN": {"n": 2}}, 5787907),
    ("maxN_not_object", {"$maxN": "$price"}, 5787900),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_nary_window_function_errors(db, case):
    _, output, code = case
    db.cakes.insert_many(CAKES)
    with pytest.raises(OperationFailure) as e:
        list(db.cakes.aggregate(by_state(output)))
    assert e.value.code == code

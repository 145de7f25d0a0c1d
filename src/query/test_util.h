// Test helpers for src/query: Extended JSON literals.
#pragma once

#include <gtest/gtest.h>

#include <string_view>

#include "bson/bson.h"

namespace hourglass::query {

inline bson::BsonObj J(std::string_view json) {
  auto r = bson::FromJson(json);
  EXPECT_TRUE(r.ok()) << json << ": " << r.status().ToString();
  return r.ok() ? r.value() : bson::BsonObj();
}

}  // namespace hourglass::query

// BufferedStream: the stream shape of blocking stages that need their whole input before they
// can emit anything ($setWindowFields, $densify). Internal to src/pipeline.
//
// On the first Next() it calls Fill(), which drains the input and Emit()s every output document;
// later calls hand those out one by one. An error from Fill() is returned once and
// ends the stream. Single-threaded, like every DocumentStream.
#pragma once

#include <optional>
#include <vector>

#include "pipeline/pipeline.h"

namespace hourglass::pipeline {

class BufferedStream : public DocumentStream {
 public:
  StatusWith<std::optional<bson::BsonObj>> Next() final {
    if (!filled_) {
      filled_ = true;
      HG_RETURN_IF_ERROR(Fill());
    }
    if (pos_ >= out_.size()) return std::optional<bson::BsonObj>();
    return std::optional<bson::BsonObj>(std::move(out_[pos_++]));
  }

 protected:
  // Drains the input and emits the stage's whole output.
  virtual Status Fill() = 0;
  void Emit(bson::BsonObj doc) { out_.push_back(std::move(doc)); }

 private:
  std::vector<bson::BsonObj> out_;
  size_t pos_ = 0;
  bool filled_ = false;
};

}  // namespace hourglass::pipeline

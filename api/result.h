// The result of a library call: a value, or an error that says what went
// wrong where (one located message, and for rules that did not compile,
// every diagnostic).
#ifndef GRAFT_API_RESULT_H_
#define GRAFT_API_RESULT_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "dsl/diagnostics.h"

namespace graft::api {

struct Error {
  // The caller was at fault (a bad option or param value): the CLI exits 2.
  bool usage = false;
  // As the CLI prints it: "model.pb: error: no node `x`", or the rendered
  // diagnostics.
  std::string message;
  std::vector<dsl::Diagnostic> diagnostics;  // rules that did not compile
  // Further lines (each step's outcome when a pipeline failed).
  std::vector<std::string> notes;

  static Error Input(std::string message) {
    Error e;
    e.message = std::move(message);
    return e;
  }
  static Error Usage(std::string message) {
    Error e = Input(std::move(message));
    e.usage = true;
    return e;
  }
  static Error From(const absl::Status& status) {
    return Input(std::string(status.message()));
  }
};

template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit
  Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit
  bool ok() const { return value_.has_value(); }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }
  const Error& error() const { return error_; }

 private:
  std::optional<T> value_;
  Error error_;
};

}  // namespace graft::api

#endif  // GRAFT_API_RESULT_H_

// Where the intermediates of a launch list live (docs/executable.md, Buffer
// planning), as plain data so that both executables share it and tests can
// pin it without a graph. Values are ValueId::index numbers. Parameters
// are read in place and graph outputs are written into the result tensors;
// every other value a step writes is an intermediate, live from the step that
// writes it to the last step that reads it.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace stitch::runtime {

// The values one step of a launch list reads and writes, in its own order.
struct StepValues {
  std::vector<int> reads;
  std::vector<int> writes;
};

struct Lifetime {
  int value = -1;
  int first_step = -1;  // the step that writes it
  int last_step = -1;   // the last step that reads it; first_step when none does
};

// When each intermediate lives: all a back end whose allocator does the
// reuse needs (the CUDA executable); plan_buffers assigns them to a pool.
struct Lifetimes {
  std::vector<Lifetime> values;                  // every intermediate, by ascending value
  std::vector<std::vector<int>> written_at;      // per step: the intermediates it writes, in its order
  std::vector<std::vector<int>> released_after;  // per step: the intermediates last read there, ascending

  const Lifetime* find(int value) const;  // nullptr for a value that is no intermediate
};

// `external`: the values that never live in a planned buffer (parameters,
// graph outputs). An intermediate written by two steps, or read before the
// step that writes it, is an InternalError.
Lifetimes plan_lifetimes(const std::vector<StepValues>& steps, const std::set<int>& external);

struct PlannedValue {
  Lifetime lifetime;
  int64_t bytes = 0;
  int buffer = -1;  // index into BufferPlan::pool_bytes
};

struct BufferPlan {
  std::vector<PlannedValue> values;  // in Lifetimes::values order
  // The pool after this plan: the sizes it was given, then the buffers it
  // appends. A given buffer is never grown: the caller only appends.
  std::vector<int64_t> pool_bytes;
  int buffers_used = 0;
  // The sum of the full sizes of the buffers used: the peak, since a buffer
  // is never returned within a run.
  int64_t bytes_used = 0;

  int intermediate_count() const { return static_cast<int>(values.size()); }
  const PlannedValue* find(int value) const;  // nullptr for a value that is no intermediate
};

// Best fit, step by step: each intermediate a step writes takes the smallest
// free buffer that holds `bytes.at(value)` (the first of equal ones, in the
// order they were freed), or a new buffer of exactly its size when none does.
// Every buffer of `pool_bytes` is free at the start, so a workspace kept from
// an earlier run is reused. A step's inputs are released only after it, so no
// step reads and writes one buffer, except where `in_place` lets a written
// value take the buffer of a value its step reads last (written -> read): a
// conv's result in its side input's place, where the call adds the side input
// in place. Taken when both are intermediates, the read one's last reader is
// that step and its buffer holds the written one.
BufferPlan plan_buffers(const Lifetimes& lifetimes, const std::map<int, int64_t>& bytes,
                        const std::vector<int64_t>& pool_bytes, const std::map<int, int>& in_place = {});

// One line per intermediate, "vVALUE: BYTES bytes in buffer B, steps [FIRST, LAST]",
// then "N intermediates in B of P buffers, BYTES bytes used": a deterministic
// text to dump and for tests to compare.
std::string print_buffer_plan(const BufferPlan& plan);

}  // namespace stitch::runtime

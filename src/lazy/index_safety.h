// The safety check of user-kernel fusion (docs/lazy.md, The safety check):
// which consecutive calls may share one loop over their range. In a fused
// loop index p runs the first call's body and then the second's for the same
// p, while eagerly every index of the first ran before any of the second; the
// two agree when no two different indices touch one element of an array
// either call writes. Each index expression is classified per array
// dimension (constant, the index itself, an affine function of it, anything
// else), and an array is safe when some of its dimensions are the same
// injective function of the range in every access of both calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stitch/kernel.h"

namespace stitch::lazy {

// How one dimension of an index tuple depends on the range's indices.
struct IndexTerm {
  enum class Kind : uint8_t {
    Constant,  // no range index, loop variable or local: the same for every index
    Affine,    // scale * range[dim] + offset, scale != 0, both literal integers
    Other,     // anything else (two range indices, a loop variable, a load, a product)
  };
  Kind kind = Kind::Other;
  int dim = -1;  // Affine: which range dimension
  int64_t scale = 0;
  int64_t offset = 0;

  bool operator==(const IndexTerm& o) const {
    return kind == o.kind && dim == o.dim && scale == o.scale && offset == o.offset;
  }
  std::string str(const UserKernel& k) const;  // "i", "i + 1", "2*j - 1", "const", "other"
};

// One load or store of an array parameter in a kernel body.
struct ArrayAccessSite {
  int param = -1;  // index into UserKernel::params
  bool write = false;
  std::vector<IndexTerm> index;
  std::string text;  // as printed, for verdicts: "x[i + 1]"
};

// Every array access of a checked kernel, in body order.
std::vector<ArrayAccessSite> collect_accesses(const UserKernel& kernel);

// One call of a trace as the safety check sees it: its kernel, its accesses,
// and which storage each array parameter is bound to (-1 for scalars).
struct CallView {
  const UserKernel* kernel = nullptr;
  const std::vector<ArrayAccessSite>* accesses = nullptr;
  std::vector<int> storage;  // per parameter
  int rank() const { return static_cast<int>(kernel->range.size()); }
};

struct SafetyVerdict {
  bool safe = true;
  std::string reason;  // why not, naming the array and the two accesses
};

// Whether every index of `kernel`'s range stores to array parameter `param`
// at exactly that index, (i0, i1, ...), before anything in the kernel reads
// or writes it: the first top-level statement touching it is that store, and
// its value does not read it. Called over a range whose extents are the
// array's shape, the kernel then overwrites every element before any read,
// so the array's old contents are never seen (zeros() needs no fill).
bool overwrites_before_reading(const UserKernel& kernel, size_t param);

// Whether `second` may run in the same loop as `first` (first earlier in the
// trace), per the rule above, when the fused loop runs over the first `rank`
// dimensions of both ranges (0: the smaller of their ranks) and each call
// runs the rest of its range serially within an index (docs/lazy.md, Ranges
// of different rank). Only dimensions below `rank` need an axis that fixes
// them. Extents may differ (guards cover the difference).
SafetyVerdict fusion_safety(const CallView& first, const CallView& second, int rank = 0);

// The largest rank (up to the smaller of the two ranges') at which the two
// calls may share a loop, or 0 when none; `why` gets the verdict at rank 1
// when it is 0.
int fusable_rank(const CallView& first, const CallView& second, SafetyVerdict* why = nullptr);

}  // namespace stitch::lazy

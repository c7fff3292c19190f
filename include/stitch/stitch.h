// Everything a program using Stitch as a library includes (docs/library.md):
// graphs built or parsed, run by the reference interpreter or compiled into
// fused kernels; user kernels, run at once or recorded on lazy arrays and
// fused (docs/kernel-language.md, docs/lazy.md). Each header includes only the standard library and the
// others below.
#pragma once

#include "stitch/attr.h"
#include "stitch/builder.h"
#include "stitch/dtype.h"
#include "stitch/error.h"
#include "stitch/graph.h"
#include "stitch/interpreter.h"
#include "stitch/kernel.h"
#include "stitch/lazy.h"
#include "stitch/npy.h"
#include "stitch/onnx.h"
#include "stitch/ops.h"
#include "stitch/report.h"
#include "stitch/runtime.h"
#include "stitch/shape.h"
#include "stitch/tensor.h"
#include "stitch/text.h"

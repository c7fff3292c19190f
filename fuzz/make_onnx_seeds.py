#!/usr/bin/python3
"""Writes the small ONNX models that seed onnx_fuzzer (scripts/fuzz.sh runs it
into build-fuzz/seeds/onnx; they are not committed)
(docs/fuzzing.md, The ONNX importer): one model per group of supported ops,
with initializers, Constant nodes, shape arithmetic that folds at import time,
symbolic dims and a value that must be known. Each file is a few hundred bytes.

    /usr/bin/python3 fuzz/make_onnx_seeds.py build-fuzz/seeds/onnx

Needs Debian's python3-onnx (docs/onnx.md, Toolchain).
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

if len(sys.argv) != 2:
    sys.exit("usage: make_onnx_seeds.py OUT_DIR")
out = sys.argv[1]
os.makedirs(out, exist_ok=True)

F = TensorProto.FLOAT


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def save(name, nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


N = helper.make_node
save("elementwise", [N("Add", ["x", "y"], ["a"]), N("Mul", ["a", "x"], ["b"]), N("Relu", ["b"], ["c"]),
                     N("Sigmoid", ["c"], ["d"]), N("Tanh", ["d"], ["e"]), N("Exp", ["e"], ["f"]),
                     N("Log", ["f"], ["g"]), N("Sqrt", ["g"], ["h"]), N("Div", ["h", "y"], ["z"])],
     [vi("x", [2, 3]), vi("y", [3])], [vi("z", [2, 3])])
save("symbolic_dims", [N("Sub", ["x", "x"], ["a"]), N("Abs", ["a"], ["b"]), N("Neg", ["b"], ["c"]),
                       N("Clip", ["c", "lo", "hi"], ["z"])],
     [vi("x", ["batch", 4])], [vi("z", ["batch", 4])],
     [init("lo", np.float32(-1)), init("hi", np.float32(1))])
save("matmul_gemm", [N("MatMul", ["x", "w"], ["a"]), N("Gemm", ["a", "w2", "b"], ["z"], transB=1, alpha=0.5)],
     [vi("x", [2, 3])], [vi("z", [2, 2])],
     [init("w", np.arange(12, dtype=np.float32).reshape(3, 4)),
      init("w2", np.ones((2, 4), np.float32)), init("b", np.zeros(2, np.float32))])
save("softmax_layernorm", [N("Softmax", ["x"], ["a"], axis=-1), N("LogSoftmax", ["a"], ["b"], axis=1),
                           N("LayerNormalization", ["b", "s", "t"], ["c"], axis=-1, epsilon=1e-5),
                           N("Erf", ["c"], ["z"])],
     [vi("x", [2, 5])], [vi("z", [2, 5])],
     [init("s", np.ones(5, np.float32)), init("t", np.full(5, 0.5, np.float32))])
save("reductions", [N("ReduceSum", ["x", "axes"], ["a"], keepdims=1), N("ReduceMean", ["x"], ["b"], axes=[0]),
                    N("ReduceMax", ["a"], ["c"], keepdims=0), N("ArgMax", ["x"], ["d"], axis=1),
                    N("ReduceLogSumExp", ["x"], ["e"], axes=[1]), N("ReduceProd", ["b"], ["z"])],
     [vi("x", [3, 4])], [vi("z", []), vi("c", None), vi("d", None), vi("e", None)],
     [init("axes", np.array([1], np.int64))])
save("shape_arith", [N("Shape", ["x"], ["s"]), N("Gather", ["s", "i0"], ["d0"], axis=0),
                     N("Unsqueeze", ["d0", "ax0"], ["d0u"]), N("Concat", ["d0u", "m1"], ["shp"], axis=0),
                     N("Reshape", ["x", "shp"], ["z"])],
     [vi("x", [2, 3, 4])], [vi("z", [2, 12])],
     [init("i0", np.array(0, np.int64)), init("ax0", np.array([0], np.int64)),
      init("m1", np.array([-1], np.int64))])
save("slice_pad_concat", [N("Slice", ["x", "st", "en", "ax", "sp"], ["a"]),
                          N("Pad", ["a", "pads", "cv"], ["b"], mode="constant"),
                          N("Concat", ["b", "b"], ["c"], axis=1), N("Transpose", ["c"], ["z"], perm=[1, 0])],
     [vi("x", [4, 6])], [vi("z", None)],
     [init("st", np.array([1, 0], np.int64)), init("en", np.array([4, 6], np.int64)),
      init("ax", np.array([0, 1], np.int64)), init("sp", np.array([1, 2], np.int64)),
      init("pads", np.array([0, 1, 0, 1], np.int64)), init("cv", np.float32(0))])
save("constants_cast", [N("Constant", [], ["k"], value=init("kv", np.array([1.5, 2.5], np.float32))),
                        N("Constant", [], ["r"], value_ints=[2, 1]),
                        N("Add", ["x", "k"], ["a"]), N("Cast", ["a"], ["b"], to=TensorProto.DOUBLE),
                        N("CastLike", ["b", "x"], ["c"]), N("Expand", ["c", "r"], ["z"])],
     [vi("x", [1, 2])], [vi("z", [2, 2])])
save("where_compare", [N("Greater", ["x", "y"], ["g"]), N("Not", ["g"], ["n"]), N("Equal", ["x", "y"], ["e"]),
                       N("Or", ["n", "e"], ["o"]), N("Where", ["o", "x", "y"], ["z"])],
     [vi("x", [3]), vi("y", [3])], [vi("z", [3])])
save("range_squeeze", [N("Range", ["s", "l", "d"], ["r"]), N("Unsqueeze", ["r", "ax"], ["u"]),
                       N("Squeeze", ["u", "ax"], ["q"]), N("Cast", ["q"], ["qf"], to=F),
                       N("Add", ["x", "qf"], ["a"]), N("Flatten", ["a"], ["z"], axis=0)],
     [vi("x", [5])], [vi("z", [1, 5])],
     [init("s", np.int64(0)), init("l", np.int64(5)), init("d", np.int64(1)),
      init("ax", np.array([0], np.int64))])
save("needs_known_input", [N("Reshape", ["x", "shape"], ["z"])],
     [vi("x", [2, 3]), vi("shape", [2], TensorProto.INT64)], [vi("z", None)])
save("int_types", [N("Add", ["x", "y"], ["a"]), N("Max", ["a", "x"], ["b"]), N("Pow", ["b", "y"], ["z"]),
                   N("ConstantOfShape", ["shp"], ["c"], value=init("cv", np.array([7], np.int32))),
                   N("Min", ["z", "c"], ["w"])],
     [vi("x", [2, 2], TensorProto.INT32), vi("y", [2, 2], TensorProto.INT32)], [vi("w", [2, 2], TensorProto.INT32)],
     [init("shp", np.array([2, 2], np.int64))])
save("old_opset", [N("Add", ["x", "x"], ["z"])], [vi("x", [2])], [vi("z", [2])], opset=7)

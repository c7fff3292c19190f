"""Passes over the FX graph around its partitioning (torch_backend._compile_graph):
before, giving shared fills and views a copy per user; after, moving reductions to
the partition whose results they read (docs/torch.md, Partitions).
"""

import torch

aten = torch.ops.aten

# Ops that only view their input: at a partition's end PyTorch applies them to the
# partition's result for free, so they leave the partition instead of being copied.
VIEWS = {
    aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.permute.default,
    aten.transpose.int, aten.t.default, aten.expand.default, aten.unsqueeze.default,
    aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.alias.default,
    aten.slice.Tensor, aten.select.int, aten.detach.default, aten.flatten.using_ints,
}

# Ops that compute nothing but a layout: a reduction moved behind one reads its
# operands in that layout (a transpose's), slower than the layout's output in memory.
LAYOUT_OPS = VIEWS | {aten.clone.default, aten.lift_fresh_copy.default, aten.cat.default, aten.stack.default}

# Reductions whose result is much smaller than what they read: where they run decides
# whether that read is a second pass over memory.
REDUCTIONS = {
    aten.sum.dim_IntList, aten.sum.default, aten.mean.dim, aten.mean.default, aten.amax.default,
}

# Ops that make a tensor from numbers alone (no tensor operand): lowered, each is a
# constant that costs a partition nothing.
_FILLS = {
    aten.full.default, aten.scalar_tensor.default, aten.zeros.default, aten.ones.default,
}


def fill_per_user(gm):
    """Gives every user of a fill (a tensor of zeros, -inf, ...) its own copy, so that
    each partition takes the fill as a constant. Shared, the fill went into one
    partition or none and reached the others as memory: a Llama block's backward
    read 4 MB of zeros from PyTorch for each rotary embedding's slice_scatter, and a
    masked softmax took its -inf as a 0-d input."""
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _FILLS or len(node.users) < 2:
            continue
        for user in list(node.users)[1:]:
            with gm.graph.inserting_before(user):
                copy = gm.graph.node_copy(node)
            user.replace_input_with(node, copy)


def _view_chain(node):
    """The views (outermost first) between node and the tensor they view, and that tensor."""
    chain = []
    while isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in VIEWS:
        chain.append(node)
        node = node.args[0]
    return chain, node


def _private_chain(gm, chain, base, before):
    """A copy of the views `chain` (outermost first) over `base`, inserted before
    `before`: the outermost copy, or base where the chain is empty."""
    previous = base
    with gm.graph.inserting_before(before):
        for view in reversed(chain):
            below = view.args[0]
            previous = gm.graph.node_copy(view, lambda a, below=below, previous=previous: previous if a is below else a)
    return previous


def private_views_for_clones(gm):
    """Gives every clone its own copy of the views it reads (up to the tensor they
    view), where another node reads one of them too. Shared, a view went into the
    clone's partition and reached the other reader as that partition's output, a
    tensor Stitch wrote: ViT's qkv heads, read in place before, were written out
    whole for the partition that reads them. Views are free in PyTorch."""
    for clone in [n for n in gm.graph.nodes if n.op == "call_function" and n.target is aten.clone.default]:
        chain, source = _view_chain(clone.args[0])
        if not any(len(view.users) > 1 for view in chain):
            continue
        clone.replace_input_with(chain[0], _private_chain(gm, chain, source, clone))


def _upstream(node, partition):
    """node and the nodes of partition it depends on through that partition's nodes."""
    found = {node: None}
    stack = [node]
    while stack:
        for a in stack.pop().all_input_nodes:
            if a in partition.nodes and a not in found:
                found[a] = None
                stack.append(a)
    return found


def _destination(group, owner, partitions):
    """The partition a group of nodes can move to without adding a dependency to it:
    the one partition whose nodes the group reads (directly or through views PyTorch
    runs), where everything else it reads is a placeholder or a view of one; or, where
    it reads placeholders alone and feeds only the graph's outputs, a partition that
    reads one of them too. None if none."""
    sources, placeholders = set(), set()
    for node in group:
        for a in node.all_input_nodes:
            if a in group:
                continue
            _, base = _view_chain(a)
            if base.op in ("placeholder", "get_attr"):
                placeholders.add(base)
            elif base in owner and base.target not in LAYOUT_OPS:
                sources.add(owner[base])
            else:
                return None  # a layout op's result, or PyTorch's (a matrix product): a move could close a cycle
    if len(sources) > 1:
        return None
    if sources:
        return next(iter(sources))
    # Placeholders alone: the destination may depend on what the group feeds (a norm's
    # statistics of an input, feeding a residual add that reads the input too), unless
    # the group feeds the graph's outputs alone (a gradient).
    if any(u.op != "output" for node in group for u in node.users if u not in group):
        return None
    for partition in partitions:
        if any(u in partition.nodes for p in placeholders for u in p.users):
            return partition
    return None


def pull_reductions(gm, partitions):
    """Moves each reduction, with the nodes of its partition it depends on, into the
    partition that computes what it reads, where the move adds no dependency to that
    partition (so no cycle): the bias and norm-weight gradients of a backward graph,
    which the partitioner grouped into one partition of their own behind the matrix
    products, read their 40 MB (a BERT layer) a second time from memory; beside their
    producers they read it while it is in cache, or in the producer's kernel. Views
    PyTorch would run between the two get a private copy inside the destination."""
    owner = {node: p for p in partitions for node in p.nodes}
    for partition in partitions:
        for reduction in [n for n in partition.nodes if n.target in REDUCTIONS]:
            if owner.get(reduction) is not partition:
                continue
            group = _upstream(reduction, partition)
            destination = _destination(group, owner, [p for p in partitions if p is not partition])
            if destination is None or destination is partition:
                continue
            for node in group:
                for a in list(node.all_input_nodes):
                    chain, base = _view_chain(a)
                    if a in group or not chain or owner.get(base) is not destination:
                        continue
                    private = _private_chain(gm, chain, base, node)
                    node.replace_input_with(a, private)
                    for view in _view_chain(private)[0]:
                        destination.add_node(view)
                        owner[view] = destination
            for node in group:
                partition.remove_node(node)
                destination.add_node(node)
                owner[node] = destination
    return [p for p in partitions if p.nodes]


def _feeds_compute(node, takes):
    """Whether a node Stitch can take and that computes (not only a layout) reads
    node, directly or through views."""
    stack = list(node.users)
    while stack:
        user = stack.pop()
        if user.op != "call_function":
            continue
        if user.target in VIEWS:
            stack.extend(user.users)
        elif user.target not in LAYOUT_OPS and takes(user):
            return True
    return False


# An addmm rounds once (the GEMM adds the bias to its f32 sums), mm + add twice: in
# f32 and f64 within the products' own rounding; in bf16 and f16 one ulp of the
# narrow type, which eager's rounding (test_torch_models's bf16 check) does not allow.
_SPLIT_DTYPES = (torch.float32, torch.float64)


def split_bias_adds(gm, takes):
    """Rewrites `addmm(bias, a, b)` as `mm(a, b) + bias` where PyTorch runs the product
    (`takes`, the partitioner's support, refuses the addmm) on the CPU and a node Stitch
    takes computes on its result: the add joins that node's partition (a GELU, a
    residual add and layer norm) and costs no pass of its own. As an addmm, the
    product's output was first filled with the broadcast bias (`copy_`, 0.74 ms of a
    BERT layer's `[1024, 3072]`) and read back by the GEMM. Products whose result only
    PyTorch reads (through views into attention) stay addmm, and so do bf16 and f16
    ones (_SPLIT_DTYPES). Returns how many split."""
    split = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not aten.addmm.default or takes(node):
            continue
        if node.kwargs.get("beta", 1) != 1 or node.kwargs.get("alpha", 1) != 1 or len(node.args) != 3:
            continue
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor) or val.device.type != "cpu" or val.dtype not in _SPLIT_DTYPES:
            continue
        if not _feeds_compute(node, takes):
            continue
        # A bias of one row broadcasts behind a reshape too; but where some user reads
        # the product at its own shape (a training graph saves it for the backward),
        # every user reads one add at that shape: an add behind each view as well would
        # read the product twice.
        bias, a, b = node.args
        behind_views = _is_row(bias) and all(_keeps_last_axis(u, val) for u in node.users)
        # Under dynamic shapes the product is [s0 * s1, F]: an add at that shape in a
        # partition would be compiled per shape; such products stay addmm.
        if any(not isinstance(d, int) for d in val.shape) and not behind_views:
            continue
        with gm.graph.inserting_before(node):
            product = gm.graph.call_function(aten.mm.default, (a, b))
            product.meta = dict(node.meta)
        total = None  # the add at the product's shape, made for the first user that needs it
        for user in list(node.users):
            if behind_views:
                # The add behind the view, so that a partition's input is the view PyTorch
                # makes of the product: a view `[s0 * s1, F] -> [s0, s1, F]` inside would
                # make it depend on a product of sizes, compiled per shape under
                # dynamic shapes.
                with gm.graph.inserting_before(user):
                    view = gm.graph.node_copy(user, lambda x: product if x is node else x)
                    behind = gm.graph.call_function(aten.add.Tensor, (view, bias))
                    behind.meta = dict(user.meta)
                user.replace_all_uses_with(behind)
                gm.graph.erase_node(user)
                continue
            if total is None:
                with gm.graph.inserting_before(node):
                    total = gm.graph.call_function(aten.add.Tensor, (product, bias))
                    total.meta = dict(node.meta)
            user.replace_input_with(node, total)
        gm.graph.erase_node(node)
        split += 1
    return split


_RESHAPES = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}


def _keeps_last_axis(user, val):
    """Whether user is a reshape of the product that keeps its last axis (the bias's)."""
    if user.op != "call_function" or user.target not in _RESHAPES:
        return False
    out = user.meta.get("val")
    return isinstance(out, torch.Tensor) and out.dim() >= 1 and out.shape[-1] == val.shape[-1]


def _is_row(bias):
    """Whether addmm's bias is one row ([F] or [1, F]), not a whole [M, F] matrix."""
    b = bias.meta.get("val") if isinstance(bias, torch.fx.Node) else None
    return isinstance(b, torch.Tensor) and all(d == 1 for d in b.shape[:-1])

"""The torch backend's fusion reports (docs/report.md, From torch.compile).

With STITCH_TORCH_REPORT=DIR, every graph that torch.compile hands the backend gets
one page, DIR/torch_g<N>_<kind>.html: each ATen op of the graph with where it runs
(a Stitch partition, or PyTorch and why: an op Stitch does not lower is marked), and,
as each partition compiles on its first call, that partition's Stitch report (its
kernels, schedules, unfused neighbours and sources; stitch.report_sections). The
page is rewritten as partitions compile, so it is complete after the first call.
"""

import html
import operator
import os
import warnings

import torch

import stitch

from .torch_lowering import lowering_refusal


def _variable(name):
    """The backend's environment variables (STITCH_TORCH_REPORT, STITCH_TORCH_DUMP;
    docs/torch.md) are read here only; unset or empty is None."""
    return os.environ.get(name) or None


def directory():
    """Where reports go, or None when STITCH_TORCH_REPORT is not set."""
    return _variable("STITCH_TORCH_REPORT")


def dump_directory():
    """Where each partition's .stitch text goes, or None when STITCH_TORCH_DUMP is not set."""
    return _variable("STITCH_TORCH_DUMP")


def graph_report(gm, graph_id, kind, partitions, refusal):
    """The page of a graph about to be partitioned, or None without STITCH_TORCH_REPORT:
    every ATen op with the partition that takes it, or why PyTorch runs it (`refusal`,
    the partitioner's reason; None for an op left between partitions)."""
    where_to = directory()
    if where_to is None:
        return None
    where = {n: f"torch_g{graph_id}_stitch_{i}" for i, p in enumerate(partitions) for n in p.nodes}
    rows = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        if node in where:
            rows.append((node.name, str(node.target), where[node], None, False))
            continue
        unsupported = isinstance(node.target, torch._ops.OpOverload) and lowering_refusal(node) is not None
        rows.append((node.name, str(node.target), None,
                     refusal(node) or "between partitions: a view, or nothing worth a kernel alone", unsupported))
    return GraphReport(f"torch_g{graph_id}", kind, rows, where_to)


class GraphReport:
    """One compiled graph's page."""

    def __init__(self, name, kind, rows, directory):
        # rows: (node, op, partition or None, why PyTorch runs it or None, unsupported)
        self.name = name
        self.kind = kind
        self.rows = rows
        self.path = os.path.join(directory, f"{name}_{kind}.html")
        self.sections = {}  # partition name -> its HTML, in compile order
        self.failed = False  # the page could not be written: warned once, not tried again
        self.write()

    def add_partition(self, partition, graph_name, text, backend, planner):
        """The Stitch report of one partition's graph (its .stitch text)."""
        anchor = partition + "-"
        try:
            graph = stitch.parse(text, graph_name + ".stitch").graphs[graph_name]
            body = stitch.report_sections(graph, planner, backend, anchor)
        except stitch.Error as e:
            body = f'<div class="note">Stitch could not plan this partition: {html.escape(str(e))}</div>'
        self.sections[partition] = body
        self.write()

    def add_fallback(self, partition, reason):
        """A partition Stitch refused at compile time: PyTorch runs it."""
        note = f'<div class="note">PyTorch runs this partition: {html.escape(reason)}</div>\n'
        self.sections[partition] = note + self.sections.get(partition, "")
        self.write()

    def _table(self):
        out = ['<h2>Ops</h2>\n<table class="ops"><tr><th>node</th><th>ATen op</th><th>runs in</th></tr>']
        for node, op, partition, why, unsupported in self.rows:
            if partition is not None:
                where = f'<a href="#{html.escape(partition)}">{html.escape(partition)}</a>'
                style = ""
            else:
                mark = "<b>unsupported</b>: " if unsupported else ""
                where = f"PyTorch ({mark}{html.escape(why)})"
                style = ' style="background:#fdecea"' if unsupported else ' style="background:#f6f6f6"'
            out.append(f"<tr{style}><td><code>{html.escape(node)}</code></td><td><code>{html.escape(op)}</code></td>"
                       f"<td>{where}</td></tr>")
        out.append("</table>")
        return "\n".join(out)

    def write(self):
        in_stitch = sum(1 for r in self.rows if r[2] is not None)
        unsupported = sum(1 for r in self.rows if r[4])
        partitions = list(dict.fromkeys(r[2] for r in self.rows if r[2] is not None))  # in graph order
        body = [f"<h1>torch.compile graph {html.escape(self.name)} ({html.escape(self.kind)})</h1>",
                f'<p class="meta">{len(self.rows)} ATen ops: {in_stitch} in {len(partitions)} Stitch partitions, '
                f"{len(self.rows) - in_stitch} in PyTorch ({unsupported} that Stitch does not lower). "
                "A partition's report appears once it has compiled (on its first call).</p>",
                self._table()]
        for partition in partitions:
            body.append(f'<h2 id="{html.escape(partition)}">Partition {html.escape(partition)}</h2>')
            body.append(self.sections.get(partition, '<p class="meta">Not compiled yet (not called).</p>'))
        page = stitch.report_page(f"stitch torch report: {self.name} ({self.kind})", "\n".join(body) + "\n")
        # The report is a by-product: a directory that cannot be written warns, and the
        # model still compiles and runs.
        if self.failed:
            return
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(self.path, "w") as f:
                f.write(page)
        except OSError as e:
            self.failed = True
            warnings.warn(f"stitch: STITCH_TORCH_REPORT: cannot write {self.path}: {e}", stacklevel=2)

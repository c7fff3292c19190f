// Results of the node tests on disk (one tab-separated file per shard) and the
// markdown report made from them (docs/onnx-conformance.md, "Results").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "case_runner.h"

namespace stitch::onnx_node {

// One line per case: name, outcome, graph ops, xla kernels, stitch kernels,
// known inputs, reason (text fields with backslash, tab and newline escaped).
void write_results(const std::filesystem::path& file, const std::vector<CaseResult>& results);
// Throws UserError for a file that is missing or not in that form.
std::vector<CaseResult> read_results(const std::filesystem::path& file);

// The short form of an unsupported case's reason under which the report
// groups it: the file name and node names dropped, an unsupported-op list
// reduced to its op types ("unsupported op(s): Conv, Pad").
std::string reason_group(const std::string& reason);

// Markdown: counts, every failure with its reason, the fusion of the
// `_expanded` cases, the passing cases, the unsupported ones by reason.
// `missing` names shards that left no results.
std::string render_report(std::vector<CaseResult> results, const std::vector<std::string>& missing);

}  // namespace stitch::onnx_node

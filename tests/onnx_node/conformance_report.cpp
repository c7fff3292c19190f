#include "conformance_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "stitch/error.h"

namespace stitch::onnx_node {

namespace fs = std::filesystem;

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char c = s[++i];
    out += c == 't' ? '\t' : c == 'n' ? '\n' : c;
  }
  return out;
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string f; std::getline(in, f, '\t');) fields.push_back(f);
  if (!line.empty() && line.back() == '\t') fields.emplace_back();
  return fields;
}

Outcome parse_outcome(const std::string& s) {
  for (Outcome o : {Outcome::Pass, Outcome::Fail, Outcome::Unsupported}) {
    if (outcome_name(o) == s) return o;
  }
  throw UserError(fmt::format("unknown outcome '{}'", s));
}

// Names as inline code, wrapped so no line of the markdown runs far past 100 columns.
std::string name_list(const std::vector<std::string>& names, size_t indent = 0) {
  std::string out, line;
  for (size_t i = 0; i < names.size(); ++i) {
    std::string item = fmt::format("`{}`{}", names[i], i + 1 < names.size() ? "," : "");
    if (!line.empty() && line.size() + 1 + item.size() > 100) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + item;
  }
  return out + line;
}

// A table cell holds no newline and no bare pipe.
std::string cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '\n' ? std::string(" ") : c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

void write_results(const fs::path& file, const std::vector<CaseResult>& results) {
  // The cuda shards' folder (run/cuda/) exists only once something made it.
  if (file.has_parent_path()) fs::create_directories(file.parent_path());
  std::ofstream out(file);
  if (!out) throw UserError(fmt::format("{}: cannot write", file.string()));
  for (const CaseResult& r : results) {
    out << fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\n", r.name, outcome_name(r.outcome), r.graph_ops, r.xla_kernels,
                       r.stitch_kernels, escape(r.known_inputs), escape(r.reason));
  }
  if (!out) throw UserError(fmt::format("{}: cannot write", file.string()));
}

std::vector<CaseResult> read_results(const fs::path& file) {
  std::ifstream in(file);
  if (!in) throw UserError(fmt::format("{}: cannot open", file.string()));
  std::vector<CaseResult> results;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    std::vector<std::string> f = split_tabs(line);
    if (f.size() != 7) throw UserError(fmt::format("{}:{}: expected 7 tab-separated fields", file.string(), line_number));
    try {
      results.push_back(CaseResult{f[0], parse_outcome(f[1]), unescape(f[6]), std::stoi(f[2]), std::stoi(f[3]),
                                   unescape(f[5]), std::stoi(f[4])});
    } catch (const std::logic_error&) {
      throw UserError(fmt::format("{}:{}: bad number", file.string(), line_number));
    }
  }
  return results;
}

std::string reason_group(const std::string& reason) {
  std::string r = reason;
  const std::string file = "model.onnx: ";
  if (size_t at = r.find(file); at != std::string::npos) r = r.substr(at + file.size());
  // A list of ops, one line each ("  op Conv (node n, ...)") after a head line
  // such as "2 unsupported op(s):": the head without its count, then the op types.
  static const std::regex op_line(R"(\n  op (\S+) \(node [^\n]*)");
  static const std::regex count(R"((^|\s)\d+ ((unsupported )?op\(s\)))");
  if (size_t end = r.find("\n  op "); end != std::string::npos) {
    std::vector<std::string> ops;
    for (auto it = std::sregex_iterator(r.begin(), r.end(), op_line); it != std::sregex_iterator(); ++it) {
      if (std::find(ops.begin(), ops.end(), (*it)[1].str()) == ops.end()) ops.push_back((*it)[1].str());
    }
    return fmt::format("{} {}", std::regex_replace(r.substr(0, end), count, "$1$2"), fmt::join(ops, ", "));
  }
  static const std::regex node_prefix(R"(^node '[^']*' \((\w+)\): )");
  static const std::regex quoted("'[^']*'");
  r = std::regex_replace(r, node_prefix, "$1: ");
  return std::regex_replace(r, quoted, "'…'");
}

std::string render_report(std::vector<CaseResult> results, const std::vector<std::string>& missing) {
  std::sort(results.begin(), results.end(), [](const CaseResult& a, const CaseResult& b) { return a.name < b.name; });
  std::vector<std::string> passed;
  std::vector<const CaseResult*> failed, fused, specialised;
  std::map<std::string, std::vector<std::string>> unsupported;
  for (const CaseResult& r : results) {
    if (r.outcome == Outcome::Pass) passed.push_back(r.name);
    if (r.outcome == Outcome::Fail) failed.push_back(&r);
    if (r.outcome == Outcome::Unsupported) unsupported[reason_group(r.reason)].push_back(r.name);
    if (r.xla_kernels >= 0) fused.push_back(&r);
    if (!r.known_inputs.empty() && r.outcome != Outcome::Unsupported) specialised.push_back(&r);
  }
  std::string md;
  md += fmt::format("{} cases: **{} pass**, **{} fail**, **{} unsupported**.\n", results.size(), passed.size(),
                    failed.size(), results.size() - passed.size() - failed.size());
  if (!missing.empty()) md += fmt::format("\n**Shards that left no results: {}.**\n", fmt::join(missing, ", "));

  md += fmt::format("\n### Failures ({})\n\n", failed.size());
  if (failed.empty()) md += "None: every case the importer accepts matches on every path.\n";
  for (const CaseResult* r : failed) md += fmt::format("- `{}`\n  ```text\n  {}\n  ```\n", r->name, [&] {
    std::string indented;
    for (char c : r->reason) indented += c == '\n' ? std::string("\n  ") : std::string(1, c);
    return indented;
  }());

  md += fmt::format("\n### `_expanded` cases under the xla planner ({})\n\n", fused.size());
  md += "Non-trivial ops: the canonical graph's nodes less constants, iotas, broadcasts and reshapes. "
        "Fused: fewer kernels than non-trivial ops (checked from 2 ops up).\n\n";
  md += "The stitch planner's kernels are shown beside, for comparison; only xla's are checked.\n\n";
  md += "| case | non-trivial ops | xla kernels | fused | stitch kernels |\n| --- | --- | --- | --- | --- |\n";
  for (const CaseResult* r : fused) {
    std::string verdict = r->graph_ops < 2 ? "n/a" : r->xla_kernels < r->graph_ops ? "yes" : "**no**";
    std::string stitch = r->stitch_kernels < 0 ? "-" : std::to_string(r->stitch_kernels);
    md += fmt::format("| `{}` | {} | {} | {} | {} |\n", r->name, r->graph_ops, r->xla_kernels, verdict, stitch);
  }

  md += fmt::format("\n### Passing ({})\n\n{}\n", passed.size(), name_list(passed));

  std::map<std::string, std::vector<std::string>> by_inputs;
  for (const CaseResult* r : specialised) by_inputs[r->known_inputs].push_back(r->name);
  md += fmt::format("\n### Imported with known inputs ({})\n\n", specialised.size());
  md += "Graph inputs that decide a shape (axes, a target shape, pads) are fed to the importer as known values "
        "(`ImportOptions::known_inputs`): the graph is specialised on the data set's values for them.\n\n";
  md += "| known inputs | cases |\n| --- | --- |\n";
  for (const auto& [inputs, names] : by_inputs) md += fmt::format("| {} | {} |\n", cell(inputs), cell(name_list(names)));

  std::vector<std::pair<std::string, std::vector<std::string>>> groups(unsupported.begin(), unsupported.end());
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  md += fmt::format("\n### Unsupported ({}), by reason\n\n", results.size() - passed.size() - failed.size());
  md += "| reason | cases |\n| --- | --- |\n";
  for (const auto& [reason, names] : groups) {
    md += fmt::format("| {} | {}: {} |\n", cell(reason), names.size(), cell(name_list(names)));
  }
  return md;
}

}  // namespace stitch::onnx_node

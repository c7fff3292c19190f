// The graph text format (DESIGN.md, "Graph text format"): parse and print.
#pragma once

#include <string>

#include "stitch/graph.h"

namespace stitch {

// Parses every graph in `text`; `file` names the source in error locations.
// Throws UserError carrying file:line:col on any syntax, name, type or
// attribute error. Composites are expanded; attributes are normalised.
Module parse_module(const std::string& text, const std::string& file = "<input>");
Module parse_file(const std::string& path);

// Prints one graph in the text format; parsing the result gives an equal graph.
std::string print_graph(const Graph& g);
std::string print_module(const Module& m);

}  // namespace stitch

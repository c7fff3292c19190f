// What weaving and packing (weave.h, pack.h) share: finding the two kernels,
// one module for both (module-scope items merged and renamed apart), their
// performance directives merged, and small builders for the statements both
// generate.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ptx/ptx_ast.h"
#include "ptx/weave/side.h"

namespace stitch::ptx {

// The .entry `name` of `m`, or its only one when `name` is ""; UserError
// naming the module's entries otherwise. `which` is "A" or "B".
const Function& find_kernel(const Module& m, const std::string& name, const char* which);

// One module for two kernels: the newer .version and .target of the two, and
// the module-scope items of A's module, then those of B's that A's lacks. Two
// modules' identically declared .const variables and .funcs are shared; any
// other clash renames B's item (and its uses in B's functions). No .entry is
// copied. UserError when the address sizes differ.
struct MergedModule {
  Module module;
  std::set<std::string> names;                  // every module-scope name now taken
  std::map<std::string, std::string> renames_b;  // B's renamed items
};
MergedModule merge_modules(const Module& a, const Module& b);

// `.extern .shared .b8 smem[]`: the names of a module's dynamic shared arrays.
std::vector<std::string> dynamic_shared_names(const Module& m);

// How each kernel of a pair made into kernel `name` is prepared (side.h):
// prefixes a_ and b_, B's module renames, each module's dynamic shared
// arrays, and the parameters renamed <name>_param_<k>, A's first.
std::pair<SideOptions, SideOptions> side_options_for(const Module& a, const Function& kernel_a, const Module& b,
                                                     const Function& kernel_b, const MergedModule& merged,
                                                     const std::string& name);

// .reqntid (must agree) and .maxntid (the smaller, dimension by dimension)
// for one kernel made of both; the other directives are dropped. `made` says
// what for the message: "a woven kernel".
std::vector<PerformanceDirective> merge_directives(const Function& a, const Function& b, const std::string& made);

Statement make_instruction(std::string opcode, std::vector<std::string> modifiers, std::vector<Operand> operands,
                           std::optional<Guard> guard = std::nullopt);
Operand symbol_operand(std::string name);
Operand address_operand(std::string name);  // [name]
Operand integer_operand(int64_t value);
Statement reg_decl(Type type, std::string name);

}  // namespace stitch::ptx

#include "core/chat/supported.h"

#include <set>
#include <string>

#include "core/chat/builtins.h"
#include "core/chat/lexer.h"

namespace tessera::chat {
namespace {

void collect_macros(const Body& body, std::set<std::string>& names) {
  for (const auto& stmt : body) {
    if (stmt->kind == Stmt::Kind::kMacro) names.insert(stmt->text);
    for (const auto& [condition, branch] : stmt->branches) collect_macros(branch, names);
    collect_macros(stmt->body, names);
    collect_macros(stmt->else_body, names);
  }
}

Status check_expr(const Program& program, const std::set<std::string>& macros, const Expr& e) {
  const auto refuse = [&](const std::string& what) {
    return unimplemented(where(program.origin, e.pos) + what +
                         " is not supported by tessera's chat-template renderer "
                         "(docs/chat-templates.md lists what is)");
  };
  if (e.kind == Expr::Kind::kFilter && !is_known_filter(e.name))
    return refuse("the filter '" + e.name + "'");
  if (e.kind == Expr::Kind::kTest && !is_known_test(e.name))
    return refuse("the test '" + e.name + "'");
  if (e.kind == Expr::Kind::kCall) {
    const Expr& callee = *e.args[0];
    if (callee.kind == Expr::Kind::kAttribute && !is_known_method(callee.name))
      return refuse("the method '" + callee.name + "'");
    if (callee.kind == Expr::Kind::kName && !is_known_global(callee.name) &&
        !macros.count(callee.name))
      return refuse("the function '" + callee.name + "'");
    if (callee.kind != Expr::Kind::kAttribute && callee.kind != Expr::Kind::kName)
      return refuse("calling the result of an expression");
  }
  for (const auto& arg : e.args)
    if (arg) RETURN_IF_ERROR(check_expr(program, macros, *arg));
  for (const auto& [key, arg] : e.kwargs) RETURN_IF_ERROR(check_expr(program, macros, *arg));
  return ok_status();
}

Status check_body(const Program& program, const std::set<std::string>& macros, const Body& body) {
  for (const auto& stmt : body) {
    if (stmt->expr) RETURN_IF_ERROR(check_expr(program, macros, *stmt->expr));
    if (stmt->condition) RETURN_IF_ERROR(check_expr(program, macros, *stmt->condition));
    for (const auto& fallback : stmt->defaults)
      if (fallback) RETURN_IF_ERROR(check_expr(program, macros, *fallback));
    for (const auto& [condition, branch] : stmt->branches) {
      RETURN_IF_ERROR(check_expr(program, macros, *condition));
      RETURN_IF_ERROR(check_body(program, macros, branch));
    }
    RETURN_IF_ERROR(check_body(program, macros, stmt->body));
    RETURN_IF_ERROR(check_body(program, macros, stmt->else_body));
  }
  return ok_status();
}

}  // namespace

Status check_supported(const Program& program) {
  std::set<std::string> macros;
  collect_macros(program.body, macros);
  return check_body(program, macros, program.body);
}

}  // namespace tessera::chat

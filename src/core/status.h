// Errors as values (see include/edgeopt/status.h, where Status and Expected are defined because
// they are part of the public API), plus the propagation macros the implementation uses. The
// macros stay private so that including the public headers defines no macros in user code.
#pragma once

#include "edgeopt/status.h"  // IWYU pragma: export

#define EDGEOPT_CONCAT_INNER(a, b) a##b
#define EDGEOPT_CONCAT(a, b) EDGEOPT_CONCAT_INNER(a, b)

// Returns the status from the enclosing function if it is an error.
#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::edgeopt::Status _st = (expr);                    \
    if (!_st.ok()) return _st;                         \
  } while (0)

// Like RETURN_IF_ERROR but prefixes context to the message.
#define RETURN_IF_ERROR_CTX(expr, ctx)                 \
  do {                                                 \
    ::edgeopt::Status _st = (expr);                    \
    if (!_st.ok()) return _st.WithContext(ctx);        \
  } while (0)

// ASSIGN_OR_RETURN(auto x, SomethingReturningExpected());
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(EDGEOPT_CONCAT(_expected_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

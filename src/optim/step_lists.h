// The check every update of optim/functional.h starts with: its lists hold one entry per parameter.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <utility>

namespace ember::optim {

// ValueError naming `who` and the list whose length is not n (the number of params).
void check_step_lists(const char* who, size_t n, std::initializer_list<std::pair<const char*, size_t>> lists);

}  // namespace ember::optim

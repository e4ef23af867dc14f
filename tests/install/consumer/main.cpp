// A project outside ember's tree, built against an install (find_package or pkg-config) or the
// build tree (tests/install/run_install_test.cmake): builds a tensor, runs autograd, checks the sums.
#include <ember/ember.h>
#include <iostream>

int main() {
  auto x = ember::ones({2, 3}).requires_grad_(true);
  auto y = (x * x).sum();
  y.backward();
  std::cout << "ember " << ember::version() << " sum=" << y.item<float>()
            << " grad=" << x.grad().sum().item<float>() << "\n";
  return (y.item<float>() == 6.0f && x.grad().sum().item<float>() == 12.0f) ? 0 : 1;
}
